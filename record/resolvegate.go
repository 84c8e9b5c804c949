package record

import "sync"

// resolveBudget bounds the sizes of the files resolved side by side at
// the end of a recording (see resolveGate). Reading a large binary holds
// a transient heap of the order of its size (its symbol table and line
// tables, or its symbol cache entry decoded), and two of the Go
// toolchain's (compile, 25 MB; go, 15 MB) read at once made the peak of a
// recording over a compile loop; small libraries still go side by side.
const resolveBudget = 16 << 20

// resolveGate lets objects be resolved side by side while the sizes of
// those in progress stay within a budget; one larger than the budget is
// resolved alone.
type resolveGate struct {
	mu       sync.Mutex
	cond     sync.Cond
	budget   int64
	inFlight int64 // sizes of the objects in progress
	running  int   // objects in progress
}

func newResolveGate(budget int64) *resolveGate {
	g := &resolveGate{budget: budget}
	g.cond.L = &g.mu
	return g
}

// enter waits until an object of size n may be resolved, and counts it
// in; leave counts it out.
func (g *resolveGate) enter(n int64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for g.running > 0 && g.inFlight+n > g.budget {
		g.cond.Wait()
	}
	g.inFlight += n
	g.running++
}

func (g *resolveGate) leave(n int64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.inFlight -= n
	g.running--
	g.cond.Broadcast()
}

// size is the size of o's file (of its image, for the vdso), the weight
// resolveGate gives it; 0 when unknown.
func (o *symObj) size() int64 {
	switch {
	case o.f != nil:
		if st, err := o.f.Stat(); err == nil {
			return st.Size()
		}
	case o.image != nil:
		return int64(len(o.image))
	}
	return 0
}
