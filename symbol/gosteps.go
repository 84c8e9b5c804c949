package symbol

import (
	"math"
	"sort"
	"sync"

	"nsprof/internal/gopclntab"
)

// goSteps holds the pcvalue tables of the function whose addresses
// [goLineTable.frames] was last asked about, decoded whole, once a second
// address of it is asked: the recorder asks for a Go binary's addresses
// in address order (all of one function in a row), and each address
// decoded its function's line, file and inline tables from the
// function's entry again, and again for each inlined call it is in.
// Over a compile loop that made most of the time the recorder spent
// naming the compiler's addresses new to its symbol cache at the end of
// each recording. A function asked about once is decoded only up to its
// address, as before.
type goSteps struct {
	mu    sync.Mutex
	entry uint64 // the function's; asked is 0 before the first
	asked int
	tabs  map[uint32][]pcStep
	// free holds the tables of functions asked before, emptied, to
	// decode the next ones into: made anew for each function, they were
	// a tenth of what a recording of a compile loop allocated.
	free [][]pcStep
	// full says a table of the function has more than maxPCSteps runs:
	// its addresses are decoded one by one.
	full bool
}

// framesOf returns the frames at pc of fn as [goLineTable.framesIn]
// makes them, with fn's pcvalue tables decoded once for the addresses of
// fn asked in a row.
func (t *goLineTable) framesOf(fn goFunc, pc uint64) []Frame {
	s := &t.steps
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.asked == 0 || s.entry != fn.entry {
		s.entry, s.asked, s.full = fn.entry, 0, false
		for _, st := range s.tabs {
			s.free = append(s.free, st[:0])
		}
		clear(s.tabs)
	}
	s.asked++
	perPC := func(off uint32, pc uint64) int32 { return t.pcvalue(off, fn.entry, pc) }
	if s.asked < 2 || s.full {
		return t.framesIn(fn, pc, perPC, cstring)
	}
	if s.tabs == nil {
		s.tabs = make(map[uint32][]pcStep)
	}
	return t.framesIn(fn, pc, func(off uint32, pc uint64) int32 {
		st, ok := s.tabs[off]
		if !ok {
			var buf []pcStep
			if n := len(s.free); n > 0 {
				buf, s.free = s.free[n-1], s.free[:n-1]
			}
			st, ok = t.decodeSteps(fn, off, buf)
			if !ok {
				s.full = true
				return perPC(off, pc)
			}
			s.tabs[off] = st
		}
		return stepAt(st, pc)
	}, cstring)
}

// stepAt returns the value decoded steps st give pc, -1 past their end.
func stepAt(st []pcStep, pc uint64) int32 {
	i := sort.Search(len(st), func(i int) bool { return st[i].next > pc })
	if i == len(st) {
		return -1
	}
	return st[i].val
}

// decodeSteps decodes fn's pcvalue table at off whole, as pcvalue reads
// it (the same windows), into its runs, appended to st[:0]; false when it
// has more than maxPCSteps of them.
func (t *goLineTable) decodeSteps(fn goFunc, off uint32, st []pcStep) ([]pcStep, bool) {
	full := false
	if off != 0 && uint64(off) < t.pctab.len() {
		t.pctab.window(uint64(off), func(b []byte) bool {
			st = st[:0]
			return gopclntab.Decode(b, fn.entry, math.MaxUint64, t.quantum, func(_, next uint64, v int32) bool {
				if len(st) >= maxPCSteps {
					full = true
					return false
				}
				st = append(st, pcStep{next, v})
				return true
			})
		})
	}
	return st, !full
}
