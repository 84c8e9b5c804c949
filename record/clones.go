package record

import (
	"errors"

	"nsprof/internal/unix"
	"nsprof/perf"
)

// cloneTracepoints are the exits of the syscalls that create tasks. In the
// parent their return value is the new task's id in the parent's PID
// namespace, which no perf record carries: paired with the FORK record
// (host ids) it maps a namespaced thread to its host id even when the
// thread exits before /proc can be read (Orbit's design, seed 004). dash
// starts commands with vfork, glibc's fork uses clone, pthread_create
// clone3. With --off-cpu and the BPF program loaded, its fork program
// gives those ids instead (bpf.Clone, see dropCloneTracepoints).
var cloneTracepoints = []string{
	"syscalls:sys_exit_clone",
	"syscalls:sys_exit_clone3",
	"syscalls:sys_exit_fork",
	"syscalls:sys_exit_vfork",
}

// lookupCloneTracepoints returns the clone tracepoints this kernel has,
// mounting tracefs first if needed (we are root when recording others).
func lookupCloneTracepoints() ([]*perf.Tracepoint, error) {
	var tps []*perf.Tracepoint
	for i, name := range cloneTracepoints {
		tp, err := perf.LookupTracepoint(name)
		if errors.Is(err, perf.ErrNoTracefs) && i == 0 {
			if merr := unix.MountTracefs(perf.TracefsDirs[0]); merr != nil {
				return nil, err
			}
			tp, err = perf.LookupTracepoint(name)
		}
		if err != nil {
			if len(tps) > 0 {
				continue // an architecture without this syscall
			}
			return nil, err
		}
		tps = append(tps, tp)
	}
	return tps, nil
}

// clonePairs matches, per parent thread, the children named by FORK
// records with the ids returned by the clone syscalls, in order.
type clonePairs struct {
	forks map[int][]int // parent tid → host ids of new tasks
	rets  map[int][]int // parent tid → ids in the parent's namespace
}

const maxPendingClones = 64

func (c *clonePairs) push(m map[int][]int, tid, v int) {
	q := append(m[tid], v)
	if len(q) > maxPendingClones {
		q = q[len(q)-maxPendingClones:]
	}
	m[tid] = q
}

// fork notes a FORK record and returns a completed pair, if any.
func (c *clonePairs) fork(parent, child int) (host, nsid int, ok bool) {
	if c.forks == nil {
		c.forks, c.rets = make(map[int][]int), make(map[int][]int)
	}
	c.push(c.forks, parent, child)
	return c.pop(parent)
}

// returned notes a clone return value and returns a completed pair, if any.
func (c *clonePairs) returned(parent, ret int) (host, nsid int, ok bool) {
	if c.forks == nil {
		c.forks, c.rets = make(map[int][]int), make(map[int][]int)
	}
	c.push(c.rets, parent, ret)
	return c.pop(parent)
}

func (c *clonePairs) pop(parent int) (int, int, bool) {
	f, r := c.forks[parent], c.rets[parent]
	if len(f) == 0 || len(r) == 0 {
		return 0, 0, false
	}
	c.forks[parent], c.rets[parent] = f[1:], r[1:]
	return f[0], r[0], true
}

// exited forgets a thread's pending clones.
func (c *clonePairs) exited(tid int) {
	delete(c.forks, tid)
	delete(c.rets, tid)
}
