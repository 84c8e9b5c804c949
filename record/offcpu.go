package record

import (
	"fmt"
	"slices"
	"strconv"
	"time"

	"nsprof/bpf"
	"nsprof/capture"
	"nsprof/perf"
)

// switchTracepoint is the event whose hits, with the callchain of the
// task leaving the CPU, give the off-CPU stacks (Options.OffCPU).
const switchTracepoint = "sched:sched_switch"

// offCPUHorizon is how long an unpaired switch event waits for its pair
// to be read: rings are merged in time order only among the records read
// together, so a switch in read before its switch out is possible.
const offCPUHorizon = 100_000_000 // ns

// offCPU turns context switches into off-CPU intervals (Options.OffCPU):
// a thread's switch out (the sched_switch tracepoint, with its stack and
// task state) paired with its next switch in (a record of the BPF
// program, or a SWITCH record, or a SWITCH_CPU_WIDE one of a system-wide
// recording). When the BPF program takes the kernel stacks
// (switchIns.kernelStacks), the tracepoint's stack is the user part and
// the switch in carries the kernel part (writeWith). The switch in does
// not come from the tracepoint naming the thread as the next task: the
// kernel drops some of the hits whose previous task is the idle task
// (perf record -a -e sched:sched_switch misses them too), the very
// switches that end a sleep on an idle CPU. Each interval is written as a
// record of capture.StacksFile with the stack under a marker frame naming
// the state, as a record of capture.OffCPUFile with its duration, and,
// when at least markNs long, as a MARK frame (capture.OffCPUGroup).
type offCPU struct {
	tp *perf.Tracepoint
	// prevState is tp's field of the task state, and nextPID that of
	// the thread coming in, looked up once.
	prevState, nextPID perf.TracepointField
	threads            map[int32]*switches
	// markers are the marker frames' JIT addresses in the current
	// capture, by state letter; 0 for none yet (JIT addresses are
	// never 0).
	markers [256]uint64
	file    []byte // records not written yet
	latest  int64  // the latest event time seen
	swept   int64
	// The counts of the current capture; done sums those of the
	// captures before it in a split recording.
	intervals, unpaired, opened uint64
	// bySample counts the intervals ended at a CPU sample (see pair).
	bySample uint64
	offNs    int64
	done     offCPUCounts
	// markNs is the shortest interval written as a mark (-1: none);
	// unmarked counts the shorter ones.
	markNs   int64
	unmarked uint64
	// free are the stacks of intervals written, for reuse: a switch-heavy
	// program allocated one a switch.
	free [][]uint64
	// bpf brings the switch-ins when the BPF program loaded (nil: they
	// are perf's SWITCH records).
	bpf *switchIns
	// With the kernel stacks from the BPF program: kernelReused counts
	// the intervals whose kernel stack was walked at an earlier switch
	// out of the thread (bpf.KernelStackReuse), noKernel those that got
	// none (the program's record of the place was evicted); kbuf and
	// sbuf are withKernel's buffers.
	kernelReused, noKernel uint64
	kbuf, sbuf             []uint64
}

// offCPUCounts are the counts of the captures a split recording ended.
type offCPUCounts struct {
	intervals, unpaired, opened, unmarked, bySample uint64
	kernelReused, noKernel                          uint64
	offNs                                           int64
}

// switches are one thread's switch events not paired yet, in time
// order, and the time of its last interval (events before it come too
// late to pair).
type switches struct {
	events []switchEvent
	last   int64
	// pid is the thread's process, as its switch outs say.
	pid int32
}

type switchEvent struct {
	time  int64
	out   bool
	state byte
	pid   int32
	cpu   int16
	addrs []uint64 // the stack of a switch out, after 2 free slots
	// kernel is the kernel stack of the switch out before a switch in
	// that carries it (bpf.SwitchIn.Kernel), kernelReused says it was
	// walked at an earlier switch out.
	kernel       []uint64
	kernelReused bool
	// ran is the time of the thread's first CPU sample after a switch
	// out (0: none yet), when no event of it came between.
	ran int64
}

// DefaultOffCPUMarks is the shortest off-CPU interval written as a mark
// by default (Options.OffCPUMarks).
const DefaultOffCPUMarks = time.Millisecond

func newOffCPU(marks time.Duration) (*offCPU, error) {
	tp, err := perf.LookupTracepoint(switchTracepoint)
	if err != nil {
		return nil, fmt.Errorf("--off-cpu: %w", err)
	}
	state, ok := tp.Fields["prev_state"]
	if !ok {
		return nil, fmt.Errorf("--off-cpu: %s has no field prev_state", switchTracepoint)
	}
	next, ok := tp.Fields["next_pid"]
	if !ok {
		return nil, fmt.Errorf("--off-cpu: %s has no field next_pid", switchTracepoint)
	}
	o := &offCPU{tp: tp, prevState: state, nextPID: next, threads: make(map[int32]*switches), markNs: marks.Nanoseconds()}
	switch {
	case marks == 0:
		o.markNs = DefaultOffCPUMarks.Nanoseconds()
	case marks < 0:
		o.markNs = -1
	}
	return o, nil
}

// taskState returns the letter of the state sched_switch reports in its
// prev_state field: a bit per state of TASK_REPORT (S, D, T, t, X, Z, P,
// I), 0 for a runnable task and TASK_REPORT_MAX for a preempted one
// (both R).
func taskState(v int64) byte {
	const letters = "SDTtXZPI"
	if v&0xff == 0 {
		return 'R'
	}
	for i := range len(letters) {
		if v&(1<<i) != 0 {
			return letters[i]
		}
	}
	return '?'
}

// handleSwitch takes a sched_switch hit: the sampled task leaves the CPU
// with the stack addrs (copied).
func (o *offCPU) handleSwitch(r *recorder, s *perf.Sample, addrs []uint64) {
	t := int64(s.Time)
	o.latest = max(o.latest, t)
	if o.bpf != nil {
		o.feedSwitchIns(r, t) // those before this switch out first
	}
	if s.TID != 0 { // not the idle task
		st, _ := o.prevState.Int(s.RawData)
		// Two slots in front for the marker frame (see write).
		var stack []uint64
		if n := len(o.free); n > 0 && cap(o.free[n-1]) >= len(addrs)+2 {
			stack, o.free = o.free[n-1][:2], o.free[:n-1]
		} else {
			stack = make([]uint64, 2, len(addrs)+2+8)
		}
		stack = append(stack, addrs...)
		o.add(r, int32(s.TID), switchEvent{time: t, out: true, state: taskState(st), pid: int32(s.PID), cpu: int16(s.CPU), addrs: stack})
		if o.bpf != nil && o.bpf.sameProcess {
			o.switchInSameProcess(r, s, t)
		}
	}
	o.sweep(r, false)
}

// switchInSameProcess takes the switch in that a switch out of a thread
// names, when the thread coming in is of the same process: the BPF
// program leaves those out (bpf.Options.SkipSameProcess). A thread never
// seen leaving a CPU is not taken, as in feedSwitchIns.
func (o *offCPU) switchInSameProcess(r *recorder, s *perf.Sample, t int64) {
	next, ok := o.nextPID.Int(s.RawData)
	if !ok || next == 0 {
		return
	}
	if th := o.threads[int32(next)]; th != nil && th.pid == int32(s.PID) {
		o.switchIn(r, int32(next), t)
	}
}

// switchIn takes a task coming back to a CPU: a SWITCH record, or a
// record of the BPF program (switchIns).
func (o *offCPU) switchIn(r *recorder, tid int32, t int64) {
	if tid == 0 {
		return
	}
	o.latest = max(o.latest, t)
	o.add(r, tid, switchEvent{time: t})
}

// ran takes a CPU sample of thread tid at time t: when the thread's last
// event before t is a switch out, the thread was back on a CPU by t,
// which ends the interval if its switch in never comes (see pair).
func (o *offCPU) ran(tid int32, t int64) {
	th := o.threads[tid]
	if th == nil {
		return
	}
	for i := len(th.events) - 1; i >= 0; i-- {
		if e := &th.events[i]; e.time < t {
			if e.out && e.ran == 0 {
				e.ran = t
			}
			return
		}
	}
}

// add inserts e into the thread's events and writes the intervals that
// are complete: a switch out followed by a switch in.
func (o *offCPU) add(r *recorder, tid int32, e switchEvent) {
	th := o.threads[tid]
	if th == nil {
		th = &switches{}
		o.threads[tid] = th
	}
	if e.out {
		th.pid = e.pid
	}
	if e.time < th.last {
		if e.out {
			o.unpaired++ // its switch in was paired with an earlier out
		}
		return
	}
	i := len(th.events)
	for i > 0 && th.events[i-1].time > e.time {
		i--
	}
	if i == len(th.events) {
		th.events = append(th.events, e) // in time order, as most come
	} else {
		th.events = slices.Insert(th.events, i, e)
	}
	o.pair(r, tid, th, o.latest-offCPUHorizon)
}

// pair writes the intervals at the front of th's events and drops the
// events before horizon that can no longer be paired.
func (o *offCPU) pair(r *recorder, tid int32, th *switches, horizon int64) {
	ev := th.events
	for len(ev) > 0 {
		e := ev[0]
		if e.out && len(ev) > 1 && !ev[1].out {
			o.writeEnded(r, tid, e, ev[1])
			th.last = ev[1].time
			ev = ev[2:]
			continue
		}
		if e.time >= horizon {
			break
		}
		// A switch in without a switch out before it: the thread was off
		// the CPU since before the recording, or the out was lost. A
		// switch out followed by another: the switch in was lost.
		switch {
		case e.out && len(ev) > 1 && e.ran > e.time && e.ran < ev[1].time:
			// Its switch in was lost, but a CPU sample of the
			// thread before its next switch out says it was back
			// by then.
			o.endBySample(r, tid, e)
			th.last = max(th.last, e.ran)
		case e.out && len(ev) > 1:
			o.unpaired++
		case !e.out && th.last != 0:
			o.unpaired++
		case e.out:
			goto done // waits for its switch in
		}
		th.last = max(th.last, e.time)
		ev = ev[1:]
	}
done:
	if len(ev) == 0 {
		th.events = th.events[:0]
	} else if len(ev) != len(th.events) {
		th.events = append(th.events[:0], ev...)
	}
}

// sweep drops the unpaired events past the horizon of every thread,
// about every horizon, or all of them at the end (final): the threads
// still off the CPU then get an interval up to the end, unless they
// exited.
func (o *offCPU) sweep(r *recorder, final bool) {
	if !final && o.latest-o.swept < offCPUHorizon {
		return
	}
	o.swept = o.latest
	end := o.latest
	if final {
		end = r.now() // when recording stopped
	}
	for tid, th := range o.threads {
		if !final {
			o.pair(r, tid, th, o.latest-offCPUHorizon)
			if len(th.events) == 0 && o.latest-th.last > 10*offCPUHorizon {
				delete(o.threads, tid) // quiet for a while: maybe gone
			}
			continue
		}
		o.pair(r, tid, th, end+1)
		for _, e := range th.events {
			switch {
			case !e.out || e.state == 'X' || e.state == 'Z' || end <= e.time:
				// nothing to write: not off the CPU up to the end
			case e.ran > e.time:
				o.endBySample(r, tid, e) // it came back: its switch in was lost
			default:
				o.writeOpen(r, tid, e, end)
				o.opened++
			}
		}
		delete(o.threads, tid)
	}
}

// endBySample writes the interval of the switch out e up to the thread's
// first CPU sample after it (e.ran): its switch in was never seen.
func (o *offCPU) endBySample(r *recorder, tid int32, e switchEvent) {
	o.writeEnded(r, tid, e, switchEvent{time: e.ran})
	o.bySample++
}

// writeEnded writes the interval from the switch out e to the switch in
// in, which ends it for good, and keeps e's stack for reuse.
func (o *offCPU) writeEnded(r *recorder, tid int32, e switchEvent, in switchEvent) {
	o.writeWith(r, tid, e, in)
	if len(o.free) < 64 {
		o.free = append(o.free, e.addrs)
	}
}

// writeWith writes the interval from the switch out e to the switch in
// in, with the kernel stack in carries: the switch outs' hits carry none
// when the BPF program takes them (switchIns.kernelStacks).
func (o *offCPU) writeWith(r *recorder, tid int32, e switchEvent, in switchEvent) {
	if o.bpf != nil && o.bpf.kernelStacks {
		if in.kernel == nil {
			o.noKernel++
		} else {
			e.addrs = o.withKernel(r, e, in)
		}
	}
	o.write(r, tid, e, in.time)
}

// writeOpen writes the interval from the switch out e up to end, the
// thread still off the CPU: with the kernel stacks from the BPF program,
// the stack its switch-in would carry is looked up in the program's maps
// (when the thread has not come back since; else it has none).
func (o *offCPU) writeOpen(r *recorder, tid int32, e switchEvent, end int64) {
	in := switchEvent{time: end}
	if o.bpf != nil && o.bpf.kernelStacks {
		in.kernel, in.kernelReused, _ = o.bpf.prog.PendingKernel(tid)
	}
	o.writeWith(r, tid, e, in)
}

// withKernel returns e's stack with the kernel stack in carries after
// its 2 free slots, in o.kbuf.
func (o *offCPU) withKernel(r *recorder, e switchEvent, in switchEvent) []uint64 {
	if in.kernelReused {
		o.kernelReused++
	}
	k := append(o.kbuf[:0], capture.ContextKernel)
	k = append(k, in.kernel...)
	o.kbuf = k
	if r.sym != nil && !r.opts.NoDecode {
		r.sym.sampled(int(e.pid), k, false, e.time)
	}
	// The hit's own stack is the user part; a task with none (a kernel
	// thread) has the sampled IP alone, a kernel address the program's
	// stack holds.
	rest := e.addrs[2:]
	if len(rest) > 0 && rest[0] == capture.ContextKernel {
		i := slices.Index(rest, capture.ContextUser)
		if i < 0 {
			i = len(rest)
		}
		rest = rest[i:]
	}
	o.sbuf = append(append(append(o.sbuf[:0], 0, 0), k...), rest...)
	return o.sbuf
}

// write writes one interval: its stack, its record, and its mark when it
// is long enough.
func (o *offCPU) write(r *recorder, tid int32, e switchEvent, in int64) {
	if r.writeErr != nil {
		return
	}
	a := o.markers[e.state]
	if a == 0 {
		var err error
		if a, err = r.w.AddJITMap(capture.OffCPUMarker(e.state)); err != nil {
			r.writeErr = err
			return
		}
		o.markers[e.state] = a
	}
	addrs := e.addrs
	addrs[0], addrs[1] = capture.ContextUser, a
	r.addStack(e.time, e.cpu, e.pid, tid, addrs)
	if d := in - e.time; o.markNs >= 0 && d >= o.markNs {
		if err := r.w.AddMark(e.time, e.pid, d, capture.OffCPUGroup, capture.OffCPUMarkName(e.state), capture.OffCPUMarkMessage(tid)); err != nil {
			r.writeErr = err
			return
		}
	} else {
		o.unmarked++
	}
	o.intervals++
	o.offNs += in - e.time
	o.file = capture.AppendOffCPU(o.file, capture.OffCPU{TID: tid, Time: e.time, Duration: in - e.time, State: e.state})
	if len(o.file) >= capture.OffCPUFileChunkData {
		o.flush(r, false)
	}
}

// flush writes the records held as a chunk of capture.OffCPUFile, the
// last one when last is set.
func (o *offCPU) flush(r *recorder, last bool) {
	if r.writeErr != nil || (len(o.file) == 0 && !last) {
		return
	}
	h := capture.FrameHeader{CPU: -1, PID: -1, Time: r.now()}
	for len(o.file) > capture.OffCPUFileChunkData {
		if err := r.w.AddFileChunk(h, capture.OffCPUFile, o.file[:capture.OffCPUFileChunkData], false); err != nil {
			r.writeErr = err
			return
		}
		o.file = o.file[capture.OffCPUFileChunkData:]
	}
	if err := r.w.AddFileChunk(h, capture.OffCPUFile, o.file, last); err != nil {
		r.writeErr = err
	}
	o.file = o.file[:0]
}

// cut ends the off-CPU time of the current capture of a split recording
// at its end, r.stopAt, once the rings were read up to it: the intervals
// complete are written; a thread still off the CPU has its interval cut
// in two, the part up to the cut written in the ending capture (counted
// as open) and the rest carried into the next one, as if the thread had
// left the CPU at its start (see carry). The ending capture then gets
// its off-CPU file and counts, as at the end of a recording. Each
// interval is so counted once, in the capture of its time.
func (o *offCPU) cut(r *recorder) {
	end := r.stopAt
	for tid, th := range o.threads {
		o.pair(r, tid, th, end+1)
		ev := th.events[:0]
		for _, e := range th.events {
			switch {
			case !e.out || e.time >= end:
				ev = append(ev, e) // not read when the cut began: kept
				continue
			case e.state == 'X' || e.state == 'Z':
				continue // exited: it never comes back
			case e.ran > e.time && e.ran <= end:
				// Back on a CPU before the cut, its switch in lost.
				o.endBySample(r, tid, e)
				th.last = max(th.last, e.ran)
				continue
			}
			o.writeOpen(r, tid, e, end)
			o.opened++
			e.time = end
			ev = append(ev, e)
			// A switch in read late, from before the cut, would
			// pair with the part carried: it is not taken.
			th.last = max(th.last, end)
		}
		th.events = ev
		if len(ev) == 0 {
			delete(o.threads, tid)
		}
	}
	o.endCapture(r)
	if o.unpaired > 0 {
		r.logf("off-CPU: capture %d: %d context switches lost their other half (a full ring, or dropped by the kernel): their time is not counted", r.split.n, o.unpaired)
	}
	o.done.intervals += o.intervals
	o.done.unpaired += o.unpaired
	o.done.opened += o.opened
	o.done.unmarked += o.unmarked
	o.done.bySample += o.bySample
	o.done.kernelReused += o.kernelReused
	o.done.noKernel += o.noKernel
	o.done.offNs += o.offNs
	o.intervals, o.unpaired, o.opened, o.unmarked, o.offNs, o.bySample = 0, 0, 0, 0, 0, 0
	o.kernelReused, o.noKernel = 0, 0
	// The marker frames are JIT addresses of the capture ended.
	o.markers = [256]uint64{}
}

// carry marks the stacks of the threads off the CPU across a cut as
// sampled in the capture just begun, whose symbol bundle must name them.
func (o *offCPU) carry(r *recorder) {
	if r.sym == nil || r.opts.NoDecode {
		return
	}
	for _, th := range o.threads {
		for _, e := range th.events {
			if e.out && len(e.addrs) > 2 {
				r.sym.sampled(int(e.pid), e.addrs[2:], false, e.time)
			}
		}
	}
}

// finish writes what is still held, the threads still off the CPU, and
// the counts as metadata, and logs them (the sums over the captures of a
// split recording).
func (o *offCPU) finish(r *recorder) {
	o.sweep(r, true)
	o.endCapture(r)
	if r.writeErr != nil {
		return
	}
	if r.split != nil && r.split.n > 1 && o.unpaired > 0 {
		// As each capture before it said at its cut: the last one's
		// count was only in the sum.
		r.logf("off-CPU: capture %d: %d context switches lost their other half (a full ring, or dropped by the kernel): their time is not counted", r.split.n, o.unpaired)
	}
	all := o.done
	all.intervals += o.intervals
	all.unpaired += o.unpaired
	all.opened += o.opened
	all.unmarked += o.unmarked
	all.bySample += o.bySample
	all.kernelReused += o.kernelReused
	all.noKernel += o.noKernel
	all.offNs += o.offNs
	r.notef("off-CPU (switch-ins from %s): %d intervals, %.3fs in all; %d still off the CPU at the end (counted up to it); %s",
		o.source(), all.intervals, float64(all.offNs)/1e9, all.opened, o.marksNote(all))
	if o.bpf != nil && o.bpf.lostAll > 0 {
		r.logf("off-CPU: %d switch-ins lost by the BPF program (its ring buffer was full)", o.bpf.lostAll)
	}
	if o.bpf != nil && o.bpf.kernelStacks {
		r.notef("off-CPU: %d of %d intervals reused the kernel stack walked at an earlier switch out of their thread at the same place (walked afresh at least every %d)",
			all.kernelReused, all.intervals, bpf.KernelStackReuse)
		if all.noKernel > 0 {
			r.logf("off-CPU: %d intervals without their kernel stack (the BPF program's record of the place was evicted)", all.noKernel)
		}
	}
	if all.bySample > 0 {
		hint := ""
		if o.bpf != nil {
			hint = "; " + capture.OffCPUUntracedHint
		}
		r.logf("off-CPU: %d intervals lost their switch in and end at the thread's first CPU sample after their switch out (within a sampling period)%s", all.bySample, hint)
	}
	if all.unpaired > 0 {
		r.logf("off-CPU: %d context switches lost their other half (a full ring, or dropped by the kernel): their time is not counted", all.unpaired)
	}
}

// endCapture writes the off-CPU records held, the last chunk of the
// capture's off-CPU file, and the capture's counts as metadata.
func (o *offCPU) endCapture(r *recorder) {
	o.flush(r, true)
	if r.writeErr != nil {
		return
	}
	md := [][2]string{
		{capture.MetaOffCPUIntervals, strconv.FormatUint(o.intervals, 10)},
		{capture.MetaOffCPUUnpaired, strconv.FormatUint(o.unpaired, 10)},
		{capture.MetaOffCPUOpen, strconv.FormatUint(o.opened, 10)},
		{capture.MetaOffCPUBySample, strconv.FormatUint(o.bySample, 10)},
		{capture.MetaOffCPUMarkNs, strconv.FormatInt(o.markNs, 10)},
		{capture.MetaOffCPUUnmarked, strconv.FormatUint(o.unmarked, 10)},
		{capture.MetaOffCPUSwitchIns, o.source()},
	}
	if o.bpf != nil && o.bpf.kernelStacks {
		md = append(md,
			[2]string{capture.MetaOffCPUKernelReused, strconv.FormatUint(o.kernelReused, 10)},
			[2]string{capture.MetaOffCPUNoKernel, strconv.FormatUint(o.noKernel, 10)})
	}
	if o.bpf != nil {
		lost := o.switchInsLost()
		o.bpf.lostAll += lost
		md = append(md, [2]string{capture.MetaOffCPUSwitchInsLost, strconv.FormatUint(lost, 10)})
	}
	if err := writeMetadata(r.w, md); err != nil {
		r.writeErr = err
	}
}

// marksNote says which of the intervals counted in c are marks.
func (o *offCPU) marksNote(c offCPUCounts) string {
	if o.markNs < 0 {
		return "no marks (Sysprof shows none)"
	}
	return fmt.Sprintf("%d of at least %v written as marks of group %s (Sysprof's timeline shows those), %d shorter ones only as stacks",
		c.intervals-c.unmarked, time.Duration(o.markNs), capture.OffCPUGroup, c.unmarked)
}
