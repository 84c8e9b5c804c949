package record

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"slices"
	"time"

	"nsprof/capture"
	"nsprof/perf"
	"nsprof/unwind"
)

// jitDeferred holds the samples whose stacks went through JIT code that
// their process's jitdumps did not describe yet, until they do. A JIT
// writes a code's records before running it, but may buffer them: Python
// 3.13's -X perf_jit writes its dump through a 4 KiB stdio buffer, so the
// trampolines of the last few dozen functions it made are described only
// when more follow or it exits, and the stacks of a script whose hot
// functions are its last stopped at them. perf unwinds after the fact,
// with the whole dump (perf inject --jit); here the stack copy is kept and
// unwound again once a read of the dumps finds new code, and for the last
// time when the process has exited (its exit read packGrace ago, as
// symbolizer.packExited waits), execs, or the capture ends. A deferred
// sample is written then, with its own time: Sysprof's format does not
// require frames in time order (its current reader sorts them), nor do
// nsprof's reports. A stack whose unwinding reached the outermost frame
// through such code is not held: V8's code keeps frame pointers, and its
// dump is buffered too.
//
// The stack copies wait in a file (see [stackSpill]), as perf keeps every
// sample's in perf.data: Python's last functions are described at its
// exit, a minute of samples later for a script that runs one (8 KiB a
// sample, 8 MiB a second at 1 kHz); what stays in memory is about 100
// bytes a sample. Where no file can be made, they wait in memory. Either
// store is bounded (maxJITDeferredBytes, maxJITDeferredMemory): past it,
// samples are written as they were unwound. Each is counted: deferred,
// completed later, written as they were after all, and not deferred for
// the bound.
type jitDeferred struct {
	procs map[int32]*deferredProc
	// spill holds the stack copies; bytes counts what the samples held
	// take in memory.
	spill stackSpill
	bytes int
	// held counts the samples held now.
	held                                      int
	deferred, completed, unresolved, overflow uint64
}

// deferredProc is the samples one process has deferred, in the order
// read, and the count of its dumps' reads that found code when they were
// last unwound (jitUnwind.reads): they are tried again when it changes.
type deferredProc struct {
	samples []deferredSample
	reads   int
}

// deferredSample is what unwinding a sample again needs, and what writing
// it does.
type deferredSample struct {
	time     int64
	cpu      int16
	pid, tid int32
	// kernel is the kernel part of the callchain, with its context
	// marker; regs and stack are the user registers and stack copy, or
	// where the copy is in the spill file (n bytes at off) when stack is
	// nil.
	kernel []uint64
	regs   unwind.Regs
	stack  []byte
	off    int64
	n      int
	// stop is how the last unwinding stopped (see dwarfUnwinder.stops);
	// missed is the first address of code not described it went
	// through, which a new read must describe for another to be worth
	// it.
	stop   unwind.Stop
	missed uint64
}

const (
	// maxJITDeferredBytes bounds the stack copies waiting in the spill
	// file: 32,768 of perf's default 8 KiB copies, half a minute of
	// samples at 1 kHz.
	maxJITDeferredBytes = 256 << 20
	// maxJITDeferredMemory bounds what waits in memory: 4,000 copies
	// held without a file.
	maxJITDeferredMemory = 32 << 20
)

// size is what d holds in memory.
func (d *deferredSample) size() int { return len(d.stack) + 8*len(d.kernel) + 96 }

// deferJIT holds sample s, whose stack went through JIT code not described
// yet, and says whether it did: not when the bound is reached, nor for a
// kernel thread.
func (r *recorder) deferJIT(s *perf.Sample) bool {
	u := r.dwarf
	ip, ok1 := u.format.UserReg(s, perf.RegX86IP)
	sp, ok2 := u.format.UserReg(s, perf.RegX86SP)
	bp, _ := u.format.UserReg(s, perf.RegX86BP)
	if !ok1 || !ok2 {
		return false
	}
	q := &r.jitq
	d := deferredSample{time: int64(s.Time), cpu: int16(s.CPU), pid: int32(s.PID), tid: int32(s.TID),
		regs: unwind.Regs{IP: ip, SP: sp, BP: bp}, stop: u.stop, missed: u.jitMissed}
	for _, a := range s.Callchain {
		if a == capture.ContextUser {
			break
		}
		if a != 0 {
			d.kernel = append(d.kernel, a)
		}
	}
	switch off, ok := q.spill.put(s.Stack); {
	case ok:
		d.off, d.n = off, len(s.Stack)
	case q.bytes+len(s.Stack) > maxJITDeferredMemory || q.spill.size+int64(len(s.Stack)) > maxJITDeferredBytes:
		q.overflow++
		return false
	default:
		d.stack = slices.Clone(s.Stack)
	}
	if q.procs == nil {
		q.procs = make(map[int32]*deferredProc)
	}
	dp := q.procs[d.pid]
	if dp == nil {
		dp = &deferredProc{}
		if p := r.sym.lookup(int(d.pid)); p != nil {
			dp.reads = p.jitUnwind.reads
		}
		q.procs[d.pid] = dp
	}
	dp.samples = append(dp.samples, d)
	q.bytes += d.size()
	q.held++
	q.deferred++
	return true
}

// jitGrew unwinds again the deferred samples of process pid when its
// dumps' reads found code since they were last unwound.
func (r *recorder) jitGrew(pid int32) {
	dp := r.jitq.procs[pid]
	if dp == nil {
		return
	}
	if p := r.sym.lookup(int(pid)); p != nil && p.jitUnwind.reads != dp.reads {
		r.retryJIT(pid, false)
	}
}

// retryJIT unwinds process pid's deferred samples again, its dumps read
// first when final, and writes those that no longer go through code not
// described: all of them when final.
func (r *recorder) retryJIT(pid int32, final bool) {
	q := &r.jitq
	dp := q.procs[pid]
	if dp == nil {
		return
	}
	u := r.dwarf
	p := r.sym.lookup(int(pid))
	if p != nil {
		if final && len(p.jit) > 0 {
			u.readJITUnwind(p)
		}
		dp.reads = p.jitUnwind.reads
	}
	kept := dp.samples[:0]
	for i := range dp.samples {
		d := &dp.samples[i]
		if !final && p != nil && !p.jitUnwind.knows(d.missed) {
			kept = append(kept, *d) // the read did not describe its code
			continue
		}
		u.jitMissed = 0
		u.stops[d.stop]--
		stack := d.stack
		if stack == nil {
			var err error
			if stack, err = q.spill.get(d.off, d.n); err != nil {
				q.spill.readFailed++
			}
		}
		out := append(u.chain[:0], d.kernel...)
		out, d.stop = u.user(out, int(d.pid), d.time, d.regs, stack)
		u.chain = out
		// A walk through code not described that reached the outermost
		// frame went right: V8's code keeps frame pointers.
		d.missed = u.jitMissed
		missed := d.missed != 0 && d.stop != unwind.StopEnd
		if missed && !final {
			kept = append(kept, *d)
			continue
		}
		if missed {
			q.unresolved++
		} else {
			q.completed++
		}
		q.bytes -= d.size()
		q.held--
		if r.writeErr == nil {
			r.writeDeferred(d, out)
		}
	}
	clear(dp.samples[len(kept):])
	dp.samples = kept
	if len(kept) == 0 {
		delete(q.procs, pid)
	}
	if q.held == 0 {
		q.spill.reset()
	}
}

// writeDeferred writes deferred sample d, its callchain addrs.
func (r *recorder) writeDeferred(d *deferredSample, addrs []uint64) {
	addrs = r.checkedStack(int(d.pid), addrs, d.time)
	if len(addrs) > capture.MaxSampleAddrs {
		addrs = addrs[:capture.MaxSampleAddrs]
	}
	if err := r.w.AddSample(d.time, d.cpu, d.pid, d.tid, addrs); err != nil {
		r.writeErr = err
		return
	}
	r.samples++
}

// tickJIT, called every so often, reads again the dumps of the processes
// with deferred samples and writes those that now unwind, and all of
// those of processes whose exit was read packGrace before now or earlier
// (their last samples read, their dumps final): before packExited packs
// them.
func (r *recorder) tickJIT(now time.Time) {
	q := &r.jitq
	if len(q.procs) == 0 {
		return
	}
	for _, e := range r.sym.exits {
		if now.Sub(e.at) < packGrace {
			break
		}
		if q.procs[int32(e.pid)] == nil {
			continue // lookup could read a process written out back
		}
		if p := r.sym.lookup(e.pid); p != nil && p.exitAt == e.rec {
			r.retryJIT(int32(e.pid), true)
		}
	}
	for pid := range q.procs {
		p := r.sym.lookup(int(pid))
		if p == nil {
			r.retryJIT(pid, true) // forgotten: nothing will describe it
			continue
		}
		if r.dwarf.readJITUnwind(p) || p.jitUnwind.reads != q.procs[pid].reads {
			r.retryJIT(pid, false)
		}
	}
}

// flushJIT writes every deferred sample, its process's dumps read for the
// last time: the capture ends.
func (r *recorder) flushJIT() {
	for pid := range r.jitq.procs {
		r.retryJIT(pid, true)
	}
}

// closeJIT writes every deferred sample and closes the spill file: the
// recording ends.
func (r *recorder) closeJIT() {
	r.flushJIT()
	r.jitq.spill.close()
}

// summary describes the deferred samples, for the log; "" when none were.
func (q *jitDeferred) summary() string {
	if q.deferred == 0 && q.overflow == 0 {
		return ""
	}
	s := fmt.Sprintf("JIT code not described yet: %d stacks waited for their jitdumps, %d completed, %d written as they were", q.deferred, q.completed, q.unresolved)
	if q.overflow > 0 {
		s += fmt.Sprintf(", %d not held (the bound on the stack copies held reached)", q.overflow)
	}
	if n := q.spill.readFailed; n > 0 {
		s += fmt.Sprintf(", %d stack copies not read back from the spill file (unwound without)", n)
	}
	return s
}

// stackSpill keeps stack copies in a file made by os.CreateTemp (O_EXCL:
// never a planted symlink) and removed at once, written through a buffer
// and read back where they were put. When no file can be made (or a
// write fails), put says so and the copies stay in memory.
type stackSpill struct {
	f      *os.File
	w      *bufio.Writer
	size   int64
	failed bool
	buf    []byte
	// readFailed counts the copies that could not be read back.
	readFailed uint64
}

// put appends b and returns where it is; false when the file cannot
// take it (none could be made, or it is full: see maxJITDeferredBytes).
func (sp *stackSpill) put(b []byte) (int64, bool) {
	if sp.failed || sp.size+int64(len(b)) > maxJITDeferredBytes {
		return 0, false
	}
	if sp.f == nil {
		f, err := os.CreateTemp("", "nsprof-stacks-*")
		if err != nil {
			sp.failed = true
			return 0, false
		}
		os.Remove(f.Name())
		sp.f, sp.w = f, bufio.NewWriterSize(f, 1<<16)
	}
	if _, err := sp.w.Write(b); err != nil {
		sp.failed = true
		return 0, false
	}
	off := sp.size
	sp.size += int64(len(b))
	return off, true
}

// get returns the n bytes put at off, valid until the next call.
func (sp *stackSpill) get(off int64, n int) ([]byte, error) {
	if err := sp.w.Flush(); err != nil {
		return nil, err
	}
	sp.buf = slices.Grow(sp.buf[:0], n)[:n]
	if _, err := sp.f.ReadAt(sp.buf, off); err != nil {
		return nil, err
	}
	return sp.buf, nil
}

// reset empties the file once nothing in it is waiting.
func (sp *stackSpill) reset() {
	if sp.f == nil || sp.size == 0 {
		return
	}
	sp.w.Reset(sp.f)
	if err := sp.f.Truncate(0); err != nil {
		sp.failed = true
	}
	if _, err := sp.f.Seek(0, io.SeekStart); err != nil {
		sp.failed = true
	}
	sp.size = 0
}

// close closes the file.
func (sp *stackSpill) close() {
	if sp.f != nil {
		sp.f.Close()
		sp.f, sp.w = nil, nil
	}
}
