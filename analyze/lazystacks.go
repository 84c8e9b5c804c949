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
	workers := min(runtime.GOMAXPROCS(0), 8, len(counts)/funcTotalsPart)
	if workers < 2 {
		l.addTotals(counts, 0, funcOf, self, total, seen)
		return true
	}
	var wg sync.WaitGroup
	var mu sync.Mutex // self and total
	n := len(counts)
	for w := 1; w < workers; w++ {
		wg.Go(func() {
			self1, total1 := make([]int, len(self)), make([]int, len(total))
			lo, hi := n*w/workers, n*(w+1)/workers
			l.addTotals(counts[lo:hi], StackID(lo), funcOf, self1, total1, make([]StackID, len(seen)))
			mu.Lock()
			for i := range self1 {
				self[i] += self1[i]
				total[i] += total1[i]
			}
			mu.Unlock()
		})
	}
	mu.Lock()
	l.addTotals(counts[:n/workers], 0, funcOf, self, total, seen)
	mu.Unlock()
	wg.Wait()
	return true
}

// funcTotalsPart is the fewest stacks funcTotals gives a goroutine.
var funcTotalsPart = 1 << 14

// addTotals is funcTotals over counts, those of the stacks from base on.
func (l *lazyStacks) addTotals(counts []int64, base StackID, funcOf []FuncID, self, total []int, seen []StackID) {
	x := l.inl
	add := func(fr FrameID, id StackID, c int) {
		if fn := funcOf[fr]; seen[fn] != id+1 {
			seen[fn] = id + 1
			total[fn] += c
		}
	}
	for i, c := range counts {
		id := base + StackID(i)
		st := l.src.Stack(id)
		if c == 0 || len(st) == 0 {
			continue
		}
		leaf := st[0]
		if a, b := x.at[leaf], x.at[leaf+1]; a < b {
			leaf = x.chains[a]
		}
		self[funcOf[leaf]] += int(c)
		for _, fr := range st {
			a, b := x.at[fr], x.at[fr+1]
			if a == b {
				add(fr, id, int(c))
				continue
			}
			for _, in := range x.chains[a:b] {
				add(in, id, int(c))
			}
		}
	}
}
