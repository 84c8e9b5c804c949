package record

import (
	"errors"
	"slices"

	"nsprof/bpf"
	"nsprof/capture"
	"nsprof/perf"
)

// The values of Options.OffCPUSwitchIns.
const (
	OffCPUSwitchInsAuto = ""
	OffCPUSwitchInsBPF  = capture.OffCPUSwitchInsBPF
	OffCPUSwitchInsPerf = capture.OffCPUSwitchInsPerf
)

// The program's reuse of kernel stacks is the one the capture's
// metadata promises (capture.OffCPUKernelStackReuse): a compile error
// when the two differ.
const (
	_ = uint(bpf.KernelStackReuse - capture.OffCPUKernelStackReuse)
	_ = uint(capture.OffCPUKernelStackReuse - bpf.KernelStackReuse)
)

// switchIns are the switch-ins of the BPF program (bpf.SwitchIns) on
// their way to offCPU.switchIn, merged in time order with the switch
// outs that the perf rings bring: before a switch out is handled, the
// switch-ins before it are (offCPU pairs events a little out of order,
// but gives up on a switch out followed by another one past its
// horizon). The program's ring buffer is read again when a switch out
// is later than the last read.
type switchIns struct {
	prog *bpf.SwitchIns
	// sameProcess says the program leaves out the switch-ins from a
	// thread of the same process, which the switch outs give
	// (offCPU.switchInSameProcess).
	sameProcess bool
	// kernelStacks says the switch-ins carry the kernel stacks of the
	// switch outs (bpf.Options.KernelStacks), which the sched_switch
	// perf events then leave out.
	kernelStacks bool
	pending      []bpf.SwitchIn
	next         int // pending[next:] are not handed on yet
	// readAt is when the ring buffer was last read (capture clock):
	// the switch-ins before it are in pending.
	readAt int64
	// lost is the program's count of switch-ins lost to a full ring
	// buffer, as of the end of the previous capture.
	lost, lostAll uint64
	err           error
}

// openSwitchIns loads the BPF program for the switch-ins of the recorded
// processes (all with mode "system"), unless Options.OffCPUSwitchIns
// says perf.
func (r *recorder) openSwitchIns(mode string) (*switchIns, error) {
	o := r.opts
	if o.OffCPUSwitchIns == OffCPUSwitchInsPerf {
		return nil, errors.New("--off-cpu-switch-ins=perf")
	}
	// The tracepoint's per-task events see every switch out of a
	// followed thread, and so the switch-ins it hands its CPU to.
	opts := bpf.Options{All: mode == "system", SkipSameProcess: mode != "system", Clones: true, KernelStacks: o.OffCPUKernelStacks != OffCPUSwitchInsPerf}
	switch mode {
	case "command":
		opts.TGIDs = []int{r.child.pid()}
	case "pids":
		// The program follows processes: a thread id of -p would
		// follow nothing.
		opts.TGIDs = processIDs(o.FS, o.PIDs)
	}
	prog, err := bpf.Open(opts)
	if err != nil {
		return nil, err
	}
	ks, _ := prog.KernelStacks()
	return &switchIns{prog: prog, sameProcess: prog.SkipsSameProcess(), kernelStacks: ks}, nil
}

// feedSwitchIns hands on the switch-ins up to time upTo to switchIn,
// reading the ring buffer first when it was last read before upTo.
func (o *offCPU) feedSwitchIns(r *recorder, upTo int64) {
	s := o.bpf
	if s == nil {
		return
	}
	if s.readAt <= upTo && s.err == nil {
		if s.next == len(s.pending) {
			s.pending, s.next = s.pending[:0], 0
		} else if s.next > 4096 && s.next*2 > len(s.pending) {
			s.pending = append(s.pending[:0], s.pending[s.next:]...)
			s.next = 0
		}
		s.readAt = capture.Now()
		_, s.err = s.prog.Read(func(in bpf.SwitchIn) { s.pending = append(s.pending, in) }, func(c bpf.Clone) {
			r.tr.cloneReturned(int(c.PID), int(c.Parent), int(c.NSID), c.Time)
		})
		if s.err != nil {
			r.logf("off-CPU: %v; the switch-ins after it are missing", s.err)
		}
	}
	// Nearly in time order: the ring buffer is shared by the CPUs.
	for s.next < len(s.pending) && s.pending[s.next].Time <= upTo {
		in := s.pending[s.next]
		s.next++
		// A thread never seen leaving a CPU: it left before its perf
		// events were enabled (a command before its exec), and the
		// switch-in pairs with nothing.
		if o.threads[in.TID] != nil {
			o.add(r, in.TID, switchEvent{time: in.Time, kernel: in.Kernel, kernelReused: in.KernelReused})
		}
	}
}

// readEmpty hands on the switch-ins once the perf rings were read empty:
// every switch out before now was handled, but for those written a
// moment ago (a millisecond is allowed).
func (o *offCPU) readEmpty(r *recorder) {
	if o != nil && o.bpf != nil {
		o.feedSwitchIns(r, capture.Now()-1_000_000)
	}
}

// switchInsLost returns the switch-ins the program lost since the
// previous call.
func (o *offCPU) switchInsLost() uint64 {
	if o.bpf == nil {
		return 0
	}
	n, err := o.bpf.prog.Lost()
	if err != nil || n < o.bpf.lost {
		return 0
	}
	d := n - o.bpf.lost
	o.bpf.lost = n
	return d
}

// source is the value of capture.MetaOffCPUSwitchIns.
func (o *offCPU) source() string {
	if o.bpf != nil {
		return capture.OffCPUSwitchInsBPF
	}
	return capture.OffCPUSwitchInsPerf
}

// close frees the BPF program. Calling it again does nothing.
func (o *offCPU) close() {
	if o.bpf != nil {
		o.bpf.prog.Close()
	}
}

// setupOffCPU adds what Options.OffCPU needs to the perf options: the
// sched_switch tracepoint with stacks and, when the BPF program that
// reports the switch-ins does not load, the SWITCH records that say when
// a thread comes back.
//
// When the BPF program takes the kernel stacks of the switch outs
// (bpf.Options.KernelStacks), the tracepoint's hits carry the user
// callchain only: the kernel's walk of the kernel stack at every switch
// was most of what --off-cpu cost a switch-heavy program, and the
// program walks it once in bpf.KernelStackReuse switch outs of a thread
// leaving at one place.
func (r *recorder) setupOffCPU(popts *perf.Options, mode string) error {
	s, err := r.openSwitchIns(mode)
	if err == nil && s.kernelStacks {
		popts.UserStackTracepoints = append(popts.UserStackTracepoints, switchTracepoint)
	} else {
		popts.StackTracepoints = append(popts.StackTracepoints, switchTracepoint)
	}
	switch {
	case err == nil:
		r.off.bpf = s
		if s.prog.Clones() {
			r.dropCloneTracepoints(popts)
		}
		kind := "raw tracepoint"
		if s.prog.Typed() {
			kind = "BTF-typed raw tracepoint (tp_btf)"
		}
		r.notef("off-CPU: switch-ins from a BPF program on the sched_switch %s", kind)
		if ok, why := s.prog.KernelStacks(); ok {
			r.notef("off-CPU: kernel stacks from the BPF program, walked at least every %d switch outs of a thread at one place", bpf.KernelStackReuse)
		} else {
			r.notef("off-CPU: kernel stacks from perf, at every switch out (%v)", why)
		}
	case r.opts.OffCPUSwitchIns == OffCPUSwitchInsBPF:
		return err
	default:
		popts.ContextSwitch = true
		r.notef("off-CPU: switch-ins from perf SWITCH records (%v)", err)
	}
	if popts.RingPages == 0 {
		popts.RingPages = perf.DefaultRingPages
		if popts.UserStack > 0 {
			popts.RingPages = perf.DefaultStackRingPages
		}
	}
	popts.RingPages = max(popts.RingPages, tracingRingPages())
	leafTracepointStack(popts)
	return nil
}

// dropCloneTracepoints takes the clone tracepoints out of popts when the
// BPF program reports the clones (bpf.Options.Clones): enabled, they make
// every system call of every task on the machine take the kernel's
// tracing path, about 2 % of a ping-pong's time through pipes.
func (r *recorder) dropCloneTracepoints(popts *perf.Options) {
	if len(r.clonesTP) == 0 {
		return
	}
	popts.CPUWideTracepoints = slices.DeleteFunc(popts.CPUWideTracepoints, func(name string) bool {
		return slices.Contains(cloneTracepoints, name)
	})
	r.clonesTP = nil
	r.notef("off-CPU: the ids of tasks created in PID namespaces from the BPF program, not from clone tracepoints")
}
