package analyze

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// lazyStacks are the stacks of a view that shows the inlined calls of its
// source's frames as frames of their own, and changes nothing else (see
// [Profile.View]): stack i is the source's stack i, each frame preceded
// by the calls inlined at it. They are expanded into tables of their own
// the first time a stack is asked for; [Profile.Top], a report's only
// question, reads the source's stacks and the inlined calls instead, so
// that a large capture's three million frame ids are neither written
// again nor held (13 MB of a report's peak, and its time).
type lazyStacks struct {
	n    int // stacks
	src  *Profile
	inl  *inlineFrames
	used []bool // stacks some selected sample has: the others stay empty

	once  sync.Once
	built atomic.Bool
	t     stackTables
}

// stackTables are stack tables: stack i is frames[start[i]:start[i+1]].
type stackTables struct {
	start  []int32
	frames []FrameID
}

// tables returns the expanded stacks, expanding them on first use.
func (l *lazyStacks) tables() *stackTables {
	l.once.Do(func() {
		size := 0
		for id, u := range l.used {
			if u {
				st := l.src.Stack(StackID(id))
				size += len(st)
				for _, fr := range st {
					if a, b := l.inl.at[fr], l.inl.at[fr+1]; a < b {
						size += int(b-a) - 1
					}
				}
			}
		}
		t := stackTables{start: make([]int32, 1, l.n+1)}
		t.frames = make([]FrameID, 0, size)
		for id, u := range l.used {
			if u {
				for _, fr := range l.src.Stack(StackID(id)) {
					t.frames = l.inl.expand(t.frames, fr)
				}
			}
			t.start = append(t.start, int32(len(t.frames)))
		}
		l.t = t
		l.built.Store(true)
	})
	return &l.t
}

// funcTotals adds, for each stack of counts (by id) not zero, its count
// to self of its leaf's function and to total of each function in it
// (once however often it recurs), as [Profile.Top] does over expanded
// stacks, without expanding them: funcOf gives the view's frames'
// functions, seen is as long as total and zero. It reports false when
// the stacks are expanded already (read them instead). Large counts are
// split between goroutines, each adding to tables of its own.
func (l *lazyStacks) funcTotals(counts []int64, funcOf []FuncID, self, total []int, seen []StackID) bool {
	if l.built.Load() {
		return false
	}
	fns := l.frameFuncs(funcOf)
	workers := min(runtime.GOMAXPROCS(0), 8, len(counts)/funcTotalsPart)
	if workers < 2 {
		l.addTotals(counts, 0, fns, self, total, seen)
		return true
	}
	var wg sync.WaitGroup
	var mu sync.Mutex // self and total
	n := len(counts)
	for w := 1; w < workers; w++ {
		wg.Go(func() {
			self1, total1 := make([]int, len(self)), make([]int, len(total))
			lo, hi := n*w/workers, n*(w+1)/workers
			l.addTotals(counts[lo:hi], StackID(lo), fns, self1, total1, make([]StackID, len(seen)))
			mu.Lock()
			for i := range self1 {
				self[i] += self1[i]
				total[i] += total1[i]
			}
			mu.Unlock()
		})
	}
	mu.Lock()
	l.addTotals(counts[:n/workers], 0, fns, self, total, seen)
	mu.Unlock()
	wg.Wait()
	return true
}

// funcTotalsPart is the fewest stacks funcTotals gives a goroutine: a
// few thousand, so that a small report's table (9 k stacks at 2 s) is
// not counted on one CPU while the other waits.
var funcTotalsPart = 1 << 12

// frameFuncs are the functions of the source's frames, as addTotals
// reads them: one number a frame, its function (>= 0) or, for a frame
// with inlined calls, ^i where chain[i:] lists the functions of the
// calls and of the frame itself, leaf first, ended by -1. Reading the
// frame's chain bounds and then its function (two tables as large as
// the frames, in no order) was most of a large report's table.
type frameFuncs struct {
	fn    []int32
	chain []int32
}

// frameFuncs makes the frameFuncs of l's source frames, funcOf giving
// the view's frames' functions.
func (l *lazyStacks) frameFuncs(funcOf []FuncID) frameFuncs {
	x := l.inl
	n := len(x.at) - 1
	f := frameFuncs{fn: make([]int32, n)}
	for fr := range n {
		a, b := x.at[fr], x.at[fr+1]
		if a == b {
			f.fn[fr] = int32(funcOf[fr])
			continue
		}
		f.fn[fr] = ^int32(len(f.chain))
		for _, in := range x.chains[a:b] {
			f.chain = append(f.chain, int32(funcOf[in]))
		}
		f.chain = append(f.chain, -1)
	}
	return f
}

// addTotals is funcTotals over counts, those of the stacks from base on.
func (l *lazyStacks) addTotals(counts []int64, base StackID, f frameFuncs, self, total []int, seen []StackID) {
	for i, c := range counts {
		id := base + StackID(i)
		st := l.src.Stack(id)
		if c == 0 || len(st) == 0 {
			continue
		}
		mark := id + 1
		leaf := f.fn[st[0]]
		if leaf < 0 {
			leaf = f.chain[^leaf]
		}
		self[leaf] += int(c)
		for _, fr := range st {
			fn := f.fn[fr]
			if fn >= 0 {
				if seen[fn] != mark {
					seen[fn] = mark
					total[fn] += int(c)
				}
				continue
			}
			for _, in := range f.chain[^fn:] {
				if in < 0 {
					break
				}
				if seen[in] != mark {
					seen[in] = mark
					total[in] += int(c)
				}
			}
		}
	}
}
