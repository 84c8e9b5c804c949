package analyze

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestTimeOrder: the merged runs give the order of a stable sort by
// time, for runs of every shape: none out of order, one event, equal
// times across runs, many short runs, and events in no order at all.
func TestTimeOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	cases := map[string][]int64{
		"empty":    nil,
		"one":      {5},
		"sorted":   {1, 2, 2, 3, 9},
		"reversed": {9, 7, 7, 3, 1},
		"ties":     {1, 4, 4, 6, 2, 4, 4, 5, 0, 4},
	}
	// Threads' runs interleaved, as rings drained in turns give them.
	var runs []int64
	for range 50 {
		base := rng.Int64N(1000)
		for range rng.IntN(40) + 1 {
			base += rng.Int64N(3)
			runs = append(runs, base)
		}
	}
	cases["runs"] = runs
	// Runs across the table's chunks.
	var long []int64
	for r := range 3 {
		for i := range allocChunk - 1 + r {
			long = append(long, int64(3*i+r))
		}
	}
	cases["chunks"] = long
	random := make([]int64, 3000)
	for i := range random {
		random[i] = rng.Int64N(100)
	}
	cases["random"] = random
	for name, times := range cases {
		var allocs allocEvents
		for _, tm := range times {
			allocs.add(allocEvent{time: tm})
		}
		want := make([]int32, len(times))
		for i := range want {
			want[i] = int32(i)
		}
		slices.SortStableFunc(want, func(a, b int32) int { return cmp.Compare(times[a], times[b]) })
		got := timeOrder(&allocs)
		if got == nil {
			if !slices.IsSortedFunc(want, func(a, b int32) int { return cmp.Compare(a, b) }) {
				t.Errorf("%s: nil (in order), want %v", name, want)
			}
			continue
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s: order %v, want %v", name, got, want)
		}
	}
}
