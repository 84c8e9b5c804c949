package record

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
	"time"

	"nsprof/capture"
	"nsprof/perf"
	"nsprof/unwind"
)

// tick is how often the loop does its periodic work (see
// [recorder.periodic]): counters, the status line, exited processes'
// state written out, and whether to stop.
const tick = 100 * time.Millisecond

// loop reads perf records and polls counters until something stops the
// recording.
func (r *recorder) loop(ctx context.Context) {
	var deadline time.Time
	if r.opts.Duration > 0 {
		deadline = r.setUp.Add(r.opts.Duration)
	}
	var childDone <-chan struct{}
	if r.child != nil {
		childDone = r.child.done
	}
	var rec perf.Record
	if r.cfd != nil {
		var wake func() error
		if r.rd != nil {
			wake = r.rd.Flush
		}
		r.cfd.watch(wake)
		defer r.cfd.unwatch()
	}
	r.releasePages()
	next := time.Now()
	for {
		now := time.Now()
		wake := next
		if r.mp != nil {
			if now.Sub(r.mp.drained) >= r.mp.every {
				r.pollMemprof(now)
			}
			if soon := r.mp.drained.Add(r.mp.every); soon.Before(next) {
				wake = soon
			}
		}
		if r.cfd != nil {
			r.cfd.poll(r)
			r.cfd.polled()
			if r.cfd.closed {
				r.cfd.unwatch()
			}
			if soon := now.Add(memprofPoll); soon.Before(wake) && r.cfd.needsPolling() {
				wake = soon
			}
		}
		if !now.Before(next) {
			next = now.Add(tick)
			if reason := r.periodic(ctx, now, deadline, childDone); reason != "" {
				r.stopped = reason
				return
			}
		}
		if r.rd == nil {
			select {
			case <-time.After(time.Until(wake)):
			case <-ctx.Done():
				next = time.Now() // stop now, not at the next tick
			case <-childDone:
				next = time.Now()
			case <-r.cfd.readyC():
			}
			continue
		}
		r.rd.SetDeadline(wake)
		err := r.readBatch(&rec)
		switch {
		case err == nil:
			if r.writeErr != nil {
				r.stopped = "write error"
				return
			}
		case errors.Is(err, os.ErrDeadlineExceeded):
			r.off.readEmpty(r)
		case errors.Is(err, perf.ErrFlushed):
			// The control socket's watcher woke the loop.
			r.off.readEmpty(r)
		case errors.Is(err, io.EOF):
			// Every followed task exited and its records were read.
			if childDone != nil {
				<-childDone
			}
			r.stopped = "command exited"
			return
		default:
			var fe *perf.FormatError
			if errors.As(err, &fe) {
				r.malformed++
				if r.malformed == 1 {
					r.logf("skipping malformed perf record: %v", err)
				}
				continue
			}
			r.logf("reading perf records: %v", err)
			r.stopped = "error"
			return
		}
	}
}

// readBatch reads and handles up to readBatchSize records, fewer when a
// write fails, and returns the error that stopped it, if any: the loop
// around it reads the clock once a batch, not once a record (a clock read
// costs as much as handling a record on some VMs).
func (r *recorder) readBatch(rec *perf.Record) error {
	for range readBatchSize {
		if err := r.rd.ReadInto(rec); err != nil {
			var fe *perf.FormatError
			if !errors.As(err, &fe) {
				r.settleHeld(true, false)
			}
			return err
		}
		r.handle(rec)
		r.settleHeld(false, false)
		if r.writeErr != nil {
			break
		}
	}
	return nil
}

const readBatchSize = 64

// periodic polls counters, refreshes the status line and says whether to
// stop, and why.
func (r *recorder) periodic(ctx context.Context, now, deadline time.Time, childDone <-chan struct{}) string {
	r.tr.flushPending(false)
	if r.rd == nil && r.child != nil && len(r.child.traces) > 0 {
		r.ns.learn(r.tr, r.child.pid())
	}
	if r.block != nil {
		r.block.tick(capture.Now())
	}
	if err := r.cs.tick(r.w, now, capture.Now()); err != nil && r.w.BytesWritten() > 0 {
		if errors.Is(err, syscall.ENOSPC) || isWriteErr(err) {
			r.writeErr = err
			return "write error"
		}
	}
	if r.tr.err != nil {
		r.writeErr = r.tr.err
		return "write error"
	}
	// Flushing every second bounds what a killed recorder loses and
	// notices a full disk while recording, not at the end.
	if now.Sub(r.flushed) >= time.Second {
		r.flushed = now
		if err := r.w.Flush(); err != nil {
			r.writeErr = err
			return "write error"
		}
	}
	if r.sym != nil {
		if r.dwarf != nil {
			r.tickJIT(now)
		}
		r.sym.packExited(now)
	}
	r.tr.forgetExited(now)
	r.tr.mounts.expire(now)
	if r.live {
		r.status.update(r.stats())
	}
	select {
	case <-ctx.Done():
		return "signal"
	case <-childDone:
		if r.rd == nil || r.beyondCommand() {
			return "command exited" // no reader, or one that would not end with it
		}
	default:
	}
	if r.cgroupDir != "" && now.Sub(r.cgroupChecked) >= time.Second {
		// The container's cgroup goes when it stops (its events stay
		// open, with nothing left to sample).
		r.cgroupChecked = now
		if _, err := os.Stat(r.cgroupDir); errors.Is(err, fs.ErrNotExist) {
			return "container stopped"
		}
	}
	if r.nst != nil && now.Sub(r.nstChecked) >= time.Second {
		r.nstChecked = now
		if !r.nst.alive() {
			return "container stopped"
		}
	}
	if !deadline.IsZero() && !now.Before(deadline) {
		return "duration"
	}
	if r.split != nil && !now.Before(r.split.next) {
		if r.split.n == r.split.Captures {
			return "duration"
		}
		r.cut(now)
		if r.writeErr != nil {
			return "write error"
		}
	}
	return ""
}

func isWriteErr(err error) bool {
	var pe *os.PathError
	return errors.As(err, &pe) || errors.Is(err, io.ErrShortWrite)
}

// handle turns one perf record into frames: those of a recorded
// container's processes when [nsTarget] tells them.
func (r *recorder) handle(rec *perf.Record) {
	if r.nst != nil {
		r.nst.take(rec, r.rd.Snapshot(), r.handleRecord)
		return
	}
	r.handleRecord(rec)
}

// handleRecord turns one perf record into frames.
func (r *recorder) handleRecord(rec *perf.Record) {
	switch rec.Type {
	case perf.RecordSample:
		s := &rec.Sample
		if r.filter != nil && r.rd.CPUWide(s) {
			if r.filterSample(rec) {
				r.sampleCPUWide(rec)
			}
			return
		}
		if r.spans != nil && r.spans.handle(r, rec) {
			return
		}
		if r.cloneReturned(s) {
			return
		}
		if r.block != nil && r.block.handle(r, rec) {
			return
		}
		r.sample(rec)
	case perf.RecordSwitch, perf.RecordSwitchCPUWide:
		// A switch in; its task is the current one of the trailer.
		if r.off != nil && rec.Misc&perf.MiscSwitchOut == 0 {
			r.off.switchIn(r, int32(rec.ID.TID), int64(rec.ID.Time))
		}
	case perf.RecordLost, perf.RecordLostSamples:
		n := rec.Lost.Lost
		if rec.Type == perf.RecordLostSamples {
			n = rec.LostSamples.Lost
		}
		r.lost += n
		t := int64(rec.Time())
		if t == 0 {
			t = capture.Now()
		}
		h := capture.FrameHeader{CPU: int16(rec.CPU), PID: -1, Time: t}
		lost := r.lost
		if r.split != nil {
			lost -= r.split.lost // this capture's
		}
		r.w.SetCounters(h, []capture.CounterUpdate{{ID: r.lostID, Value: capture.IntValue(int64(lost))}})
		if err := r.w.AddLog(t, -1, capture.LogWarning, "nsprof", fmt.Sprintf("Lost %d samples on CPU %d", n, rec.CPU)); err != nil {
			r.writeErr = err
		}
	default:
		if r.filter != nil {
			r.filter.learn(rec)
		}
		r.tr.handle(rec)
		if r.tr.err != nil {
			r.writeErr = r.tr.err
		}
	}
}

// cloneReturned takes s when it is a hit of a clone tracepoint (the
// system call's return in the parent and in the child) and reports
// whether it was.
func (r *recorder) cloneReturned(s *perf.Sample) bool {
	tp := r.cloneTP(s)
	if tp == nil {
		return false
	}
	if ret, ok := tp.Int(s.RawData, "ret"); ok {
		r.tr.cloneReturned(int(s.PID), int(s.TID), int(ret), int64(s.Time))
	}
	return true
}

// cloneTP returns the clone tracepoint s is a hit of, or nil.
func (r *recorder) cloneTP(s *perf.Sample) *perf.Tracepoint {
	if len(s.RawData) <= 4 {
		return nil
	}
	for _, tp := range r.clonesTP {
		if tp.Matches(s.RawData) {
			return tp
		}
	}
	return nil
}

// sampleCPUWide takes sample rec of a per-CPU event of a recorded
// process (see targetFilter): of the sampling event, or of a clone
// tracepoint (perf.Options.CPUWideTracepoints).
func (r *recorder) sampleCPUWide(rec *perf.Record) {
	if !r.cloneReturned(&rec.Sample) {
		r.sample(rec)
	}
}

// sample writes sample rec, of the main event or of the sched_switch
// tracepoint, with its stack.
func (r *recorder) sample(rec *perf.Record) {
	s := &rec.Sample
	r.tr.sampled(int(s.PID), int64(s.Time))
	addrs := r.stack(rec)
	if r.off != nil {
		if r.off.tp.Matches(s.RawData) {
			r.off.handleSwitch(r, s, addrs)
			return
		}
		r.off.ran(int32(s.TID), int64(s.Time))
	}
	if r.dwarf != nil && r.dwarf.jitMissed != 0 && r.dwarf.stop != unwind.StopEnd && r.deferJIT(s) {
		return
	}
	if err := r.w.AddSample(int64(s.Time), int16(s.CPU), int32(s.PID), int32(s.TID), addrs); err != nil {
		r.writeErr = err
		return
	}
	r.samples++
	if len(r.jitq.procs) > 0 {
		r.jitGrew(int32(s.PID))
	}
}

// stack returns the callchain of sample rec as the capture stores it:
// the user part unwound or completed as the options say, callers that
// cannot be return addresses trimmed, the sampled IP alone when the
// kernel gave no callchain. It is valid until the next call.
func (r *recorder) stack(rec *perf.Record) []uint64 {
	s := &rec.Sample
	addrs := r.checkedStack(int(s.PID), r.unwound(rec), int64(s.Time))
	if len(addrs) == 0 {
		ctxMark := capture.ContextUser
		if rec.Misc&perf.MiscCPUModeMask == perf.MiscKernel {
			ctxMark = capture.ContextKernel
		}
		addrs = []uint64{ctxMark, s.IP}
		if r.sym != nil && !r.opts.NoDecode {
			r.sym.sampled(int(s.PID), addrs, false, int64(s.Time))
		}
	}
	if len(addrs) > capture.MaxSampleAddrs {
		addrs = addrs[:capture.MaxSampleAddrs]
	}
	return addrs
}

// unwound returns the callchain of sample rec unwound or completed as the
// options say, before checkedStack. It is valid until the next call.
func (r *recorder) unwound(rec *perf.Record) []uint64 {
	s := &rec.Sample
	if r.dwarf != nil {
		return r.dwarf.callchain(s)
	}
	addrs := dropZeros(s.Callchain)
	if r.leaf != nil {
		addrs = r.leaf.complete(s, addrs)
	}
	return addrs
}

// checkedStack trims the callers of addrs, a stack of process pid, that
// cannot be return addresses, and marks the rest for the symbol bundle.
func (r *recorder) checkedStack(pid int, addrs []uint64, t int64) []uint64 {
	if r.sym != nil {
		addrs = r.sym.trimCallers(pid, addrs)
		if !r.opts.NoDecode {
			r.sym.sampled(pid, addrs, false, t)
		}
	}
	return addrs
}

// dropZeros removes the 0 entries a frame-pointer walk leaves where a chain
// ends; they are never code addresses. It works in place.
func dropZeros(a []uint64) []uint64 {
	out := a[:0]
	for _, v := range a {
		if v != 0 {
			out = append(out, v)
		}
	}
	return out
}
