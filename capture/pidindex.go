package capture

import (
	"maps"
	"slices"
)

// pidIndex finds the records of a process in a table sorted by pid
// first: a lookup then searches the few hundred addresses of one process,
// in place, rather than a million records compared by (pid, address).
type pidIndex struct {
	// at maps a pid to the first of its records and the end of them.
	at map[int32][2]int
}

// newPIDIndex indexes the n records sorted by pid, whose pids pid gives.
func newPIDIndex(n int, pid func(i int) int32) pidIndex {
	x := pidIndex{at: make(map[int32][2]int)}
	for i := 0; i < n; {
		p := pid(i)
		j := i + 1
		for j < n && pid(j) == p {
			j++
		}
		x.at[p] = [2]int{i, j}
		i = j
	}
	return x
}

// span returns the records of pid, from lo up to hi; lo == hi when there
// are none.
func (x pidIndex) span(pid int32) (lo, hi int) {
	r := x.at[pid]
	return r[0], r[1]
}

// sorted returns the pids indexed, in increasing order.
func (x pidIndex) sorted() []int32 {
	return slices.Sorted(maps.Keys(x.at))
}
