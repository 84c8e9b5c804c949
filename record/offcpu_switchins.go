package record

import (
	"errors"

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

// switchIns are the switch-ins of the BPF program (bpf.SwitchIns) on
// their way to offCPU.switchIn. The program's ring buffer is read when
// the perf rings are, but a switch-in is handed on only once the perf
// records up to its time were read: the switch out it ends comes from a
// perf ring, read at its wakeup watermark or at the loop's tick, up to
// 100 ms after it happened, and offCPU keeps a switch-in waiting for its
// switch out only that long (offCPUHorizon).
type switchIns struct {
	prog    *bpf.SwitchIns
	pending []bpf.SwitchIn
	next    int // pending[next:] are not handed on yet
	// perfTime is the time of the latest perf record of the off-CPU
	// events handled: every perf record before it was read.
	perfTime int64
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
	opts := bpf.Options{All: mode == "system"}
	switch mode {
	case "command":
		opts.TGIDs = []int{r.child.pid()}
	case "pids":
		opts.TGIDs = o.PIDs
	}
	prog, err := bpf.Open(opts)
	if err != nil {
		return nil, err
	}
	return &switchIns{prog: prog}, nil
}

// readSwitchIns reads the BPF program's switch-ins and hands on those
// up to time upTo to switchIn.
func (o *offCPU) readSwitchIns(r *recorder, upTo int64) {
	s := o.bpf
	if s == nil {
		return
	}
	if s.err == nil && s.prog.Pending() > 0 {
		if s.next > 0 && s.next == len(s.pending) {
			s.pending, s.next = s.pending[:0], 0
		}
		_, s.err = s.prog.Read(func(in bpf.SwitchIn) { s.pending = append(s.pending, in) })
		if s.err != nil {
			r.logf("off-CPU: %v; the switch-ins after it are missing", s.err)
		}
	}
	// Nearly in time order: the ring buffer is shared by the CPUs.
	for s.next < len(s.pending) && s.pending[s.next].Time <= upTo {
		in := s.pending[s.next]
		s.next++
		o.switchIn(r, in.TID, in.Time)
	}
	if s.next > 4096 && s.next*2 > len(s.pending) {
		s.pending = append(s.pending[:0], s.pending[s.next:]...)
		s.next = 0
	}
}

// afterPerf hands on the switch-ins that the perf records read by now
// have caught up with; empty says the perf rings were just read empty
// (now is the time after).
func (o *offCPU) afterPerf(r *recorder, empty bool, now int64) {
	if o.bpf == nil {
		return
	}
	upTo := o.bpf.perfTime
	if empty {
		// Records written since but stamped before now are
		// possible for a moment: not quite up to now.
		upTo = max(upTo, now-1_000_000)
	}
	o.readSwitchIns(r, upTo)
}

// allSwitchIns hands on every switch-in read by now: the end of a
// recording, or of a capture once its perf records were read.
func (o *offCPU) allSwitchIns(r *recorder, upTo int64) {
	if o.bpf != nil {
		o.readSwitchIns(r, upTo)
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
func (r *recorder) setupOffCPU(popts *perf.Options, mode string) error {
	popts.StackTracepoints = append(popts.StackTracepoints, switchTracepoint)
	s, err := r.openSwitchIns(mode)
	switch {
	case err == nil:
		r.off.bpf = s
		r.notef("off-CPU: switch-ins from a BPF program on the sched_switch raw tracepoint")
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
