package perf

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"nsprof/internal/unix"
)

// resources are what a Reader must release: event fds, rings and the
// poller. They are kept apart from Reader so that a cleanup can free
// them when a Reader is dropped without Close.
type resources struct {
	fds   []int
	rings []*ring
	poll  poller
	// uprobes maps the ids of the Uprobes events to their index i in
	// Options.Uprobes; their samples have the layout uprobeFormats[i].
	uprobes       map[uint64]int
	uprobeFormats []Format
	// probeRings counts the rings of rings that are a CPU's probes',
	// not its samples'.
	probeRings int
	// uprobeDefs are the probes' definitions in tracefs, removed once
	// their events are closed.
	uprobeDefs *uprobeDefs
	// cpuWide counts the fds of Options.SampleCPUWide's per-CPU events
	// and CPUWideTracepoints', which never hang up; cpuWideIDs holds
	// their ids.
	cpuWide    int
	cpuWideIDs map[uint64]bool
}

// close releases everything once; later calls do nothing.
func (res *resources) close() error {
	var errs []error
	for _, rg := range res.rings {
		errs = append(errs, rg.close())
	}
	for _, fd := range res.fds {
		errs = append(errs, unix.Close(fd))
	}
	if res.uprobeDefs != nil {
		errs = append(errs, res.uprobeDefs.remove())
		res.uprobeDefs = nil
	}
	if res.poll != nil {
		errs = append(errs, res.poll.close())
	}
	res.fds, res.rings, res.poll = nil, nil, nil
	return errors.Join(errs...)
}

// Reader reads the records of a set of per-CPU perf events.
//
// A Reader must not be read (Read, ReadInto) from more than one goroutine
// at a time. Close, Flush, SetDeadline, Enable and Disable may be called
// from any goroutine; Close and Flush wake a waiting ReadInto.
type Reader struct {
	mu      sync.Mutex // held while reading; Close takes it to free the rings
	res     *resources
	format  Format
	event   Event
	scratch []byte // a record wrapping around a ring's end is copied here
	// next holds, per ring, the time of its next record up to the head
	// snapshot, for merging the rings in time order.
	next    []nextRecord
	pending bool // a head snapshot is being drained
	hungUp  int  // event fds whose tasks all exited
	perTask bool // events follow tasks, so they can all hang up
	// namespaces: the events write RecordNamespaces records.
	namespaces bool
	// last says the snapshot taken once every followed task exited was
	// drained: with Options.SampleCPUWide, records of other tasks keep
	// coming after.
	last bool
	// snapshots counts the head snapshots (see Snapshot).
	snapshots atomic.Uint64
	cpus      int

	ctlMu    sync.Mutex // orders Enable and Disable with Close
	closed   atomic.Bool
	flush    atomic.Bool
	deadline atomic.Int64 // UnixNano, 0 for none
	cleanup  runtime.Cleanup
}

func newReader(res *resources, f Format, ev Event, perTask bool) *Reader {
	r := &Reader{
		res:     res,
		format:  f,
		event:   ev,
		scratch: make([]byte, maxRecord),
		next:    make([]nextRecord, len(res.rings)),
		perTask: perTask,
		cpus:    len(res.rings) - res.probeRings,
	}
	r.cleanup = runtime.AddCleanup(r, func(res *resources) { res.close() }, res)
	return r
}

// Format returns the layout of the records, for decoding them again with
// [DecodeRecord] or reading user registers with [Format.UserReg].
func (r *Reader) Format() Format { return r.format }

// Event returns the event that drives sampling, which is EventCPUClock
// when EventCycles was asked for on a machine without a usable PMU.
func (r *Reader) Event() Event { return r.event }

// Namespaces reports whether the events write [RecordNamespaces] records:
// asked for with [Options.Namespaces], and allowed.
func (r *Reader) Namespaces() bool { return r.namespaces }

// CPUs returns the number of per-CPU rings: one per online CPU.
func (r *Reader) CPUs() int { return r.cpus }

// SetDeadline makes a waiting [Reader.ReadInto] return
// os.ErrDeadlineExceeded once t has passed and no record is pending. The
// zero time waits forever, which is the default. A ReadInto that is
// already waiting keeps the deadline it started with.
func (r *Reader) SetDeadline(t time.Time) {
	var ns int64
	if !t.IsZero() {
		ns = t.UnixNano()
	}
	r.deadline.Store(ns)
}

// Flush makes a waiting or the next [Reader.ReadInto] return ErrFlushed
// once no record is pending any more, for example to stop reading
// promptly after the profiled command exited.
func (r *Reader) Flush() error {
	r.ctlMu.Lock()
	defer r.ctlMu.Unlock()
	if r.closed.Load() {
		return fmt.Errorf("flush perf reader: %w", ErrClosed)
	}
	r.flush.Store(true)
	return r.res.poll.wake()
}

// Read decodes the next record into a new Record. Prefer
// [Reader.ReadInto] in loops: it does not allocate.
func (r *Reader) Read() (Record, error) {
	var rec Record
	err := r.ReadInto(&rec)
	return rec, err
}

// ReadInto decodes the next record into rec, reusing rec's slices. When
// no record is pending it waits for the kernel, then drains every CPU's
// ring before waiting again, merging the rings by record time: what
// happened on one CPU (an exec, a new mapping) comes before the samples
// taken after it on another, at least among the records read together.
// The kernel wakes it only once a ring fills to the wakeup watermark
// ([Options.WakeupBytes]) or a task exits; records below the watermark
// are read when the deadline passes, so set one to bound the latency.
//
// It returns os.ErrDeadlineExceeded when the deadline passes, ErrFlushed
// after [Reader.Flush], a wrapped ErrClosed after [Reader.Close], and
// io.EOF when every followed task and its descendants exited and all their
// records were read (never for [AllTasks]). A *[FormatError] names the CPU
// and offset of a malformed record; reading can go on after it.
func (r *Reader) ReadInto(rec *Record) error {
	if r.closed.Load() {
		return fmt.Errorf("read perf records: %w", ErrClosed)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	rings := r.res.rings
	for {
		if r.closed.Load() {
			return fmt.Errorf("read perf records: %w", ErrClosed)
		}
		if r.pending {
			i, ferr := r.earliest()
			if ferr != nil {
				rec.Type = RecordNone
				return ferr
			}
			if i >= 0 {
				rg := rings[i]
				raw, off, ferr := rg.peek(r.scratch)
				r.next[i].known = false
				if ferr == nil && raw != nil {
					ferr = decode(rec, raw, r.formatOf(raw))
					rg.consume(uint64(len(raw)))
					if ferr == nil {
						rec.CPU = rg.cpu
						return nil
					}
					ferr.CPU, ferr.Offset = rg.cpu, off
				}
				if ferr != nil {
					rec.Type = RecordNone
					return ferr
				}
			}
			r.pending = false
		}
		if r.perTask && r.res.cpuWide > 0 && r.hungUp == len(r.res.fds)-r.res.cpuWide {
			// Every followed task exited: one more snapshot holds
			// all they wrote; what the per-CPU events sample after
			// is of other tasks.
			if !r.last {
				r.last = true
				if r.loadHeads() {
					continue
				}
			}
			return io.EOF
		}
		if r.loadHeads() {
			continue
		}
		if r.flush.Swap(false) {
			return ErrFlushed
		}
		if r.perTask && r.hungUp == len(r.res.fds) {
			return io.EOF
		}
		var deadline time.Time
		if ns := r.deadline.Load(); ns != 0 {
			deadline = time.Unix(0, ns)
		}
		err := r.res.poll.wait(deadline, r.hup)
		if errors.Is(err, os.ErrDeadlineExceeded) && r.loadHeads() {
			continue // records below the wakeup watermark
		}
		if err != nil {
			return err
		}
	}
}

func (r *Reader) hup(int) { r.hungUp++ }

// formatOf returns the layout of record raw: that of its user probe for
// a probe's sample (see uprobeFormat), the main event's for every other.
func (r *Reader) formatOf(raw []byte) Format {
	if len(r.res.uprobes) == 0 || len(raw) < headerSize+8 || RecordType(binary.NativeEndian.Uint32(raw)) != RecordSample {
		return r.format
	}
	// PERF_SAMPLE_IDENTIFIER comes first in a sample.
	if i, ok := r.res.uprobes[binary.NativeEndian.Uint64(raw[headerSize:])]; ok {
		return r.res.uprobeFormats[i]
	}
	return r.format
}

// Snapshot returns the number of times the reader took a snapshot of
// the rings' heads, to drain each ring up to it, merged in time order:
// the records [Reader.ReadInto] returned were taken in the snapshot
// Snapshot returns after it. A record written before another (in real
// time, on any CPU) is returned at most one snapshot after it: a
// caller that finds a sample of a task it does not know yet, whose FORK
// or COMM record another CPU's ring holds, has it once it has handled
// the records of the next snapshot, and knows it has when a record of
// a later snapshot comes, or when ReadInto returns without a record
// (all drained), but for a *FormatError. It may be called from any
// goroutine.
func (r *Reader) Snapshot() uint64 { return r.snapshots.Load() }

// CPUWide reports whether sample s is of an event of
// [Options.SampleCPUWide], which samples every task on its CPU, or of
// one of [Options.CPUWideTracepoints] opened per CPU.
func (r *Reader) CPUWide(s *Sample) bool { return r.res.cpuWideIDs[s.Identifier] }

// loadHeads snapshots every ring's head and restarts draining. It
// reports whether any ring holds records.
func (r *Reader) loadHeads() bool {
	r.snapshots.Add(1)
	any := false
	for i, rg := range r.res.rings {
		if rg.loadHead() {
			any = true
		}
		r.next[i].known = false
	}
	r.pending = any
	return any
}

// nextRecord is what the merge knows of a ring's next record.
type nextRecord struct {
	known bool   // time and empty are up to date
	empty bool   // no record before the head snapshot
	time  uint64 // 0 for records without a time
}

// earliest returns the index of the ring whose next record has the
// earliest time (the lowest index among equal times), or -1 when every
// ring is drained up to its head snapshot. A malformed record discards
// the rest of its ring and is returned as an error.
func (r *Reader) earliest() (int, *FormatError) {
	best := -1
	for i, rg := range r.res.rings {
		n := &r.next[i]
		if !n.known {
			raw, _, ferr := rg.peek(r.scratch)
			if ferr != nil {
				rg.discard()
				return -1, ferr
			}
			*n = nextRecord{known: true, empty: raw == nil}
			if raw != nil {
				n.time = r.format.rawTime(raw)
			}
		}
		if !n.empty && (best < 0 || n.time < r.next[best].time) {
			best = i
		}
	}
	return best, nil
}

// Enable starts (or resumes) sampling on every event.
func (r *Reader) Enable() error {
	return r.ioctl(unix.PERF_EVENT_IOC_ENABLE, "enable")
}

// Disable pauses sampling on every event. Records already written can
// still be read.
func (r *Reader) Disable() error {
	return r.ioctl(unix.PERF_EVENT_IOC_DISABLE, "disable")
}

func (r *Reader) ioctl(req uint, what string) error {
	r.ctlMu.Lock()
	defer r.ctlMu.Unlock()
	if r.closed.Load() {
		return fmt.Errorf("%s perf events: %w", what, ErrClosed)
	}
	for _, fd := range r.res.fds {
		if err := unix.IoctlSetInt(fd, req, 0); err != nil {
			return fmt.Errorf("%s perf event fd %d: %w", what, fd, err)
		}
	}
	return nil
}

// Close frees the events, which stops sampling, and the rings, and makes
// a waiting ReadInto return; records not read yet are lost. It may be called from any goroutine;
// calls after the first return nil.
func (r *Reader) Close() error {
	r.ctlMu.Lock()
	defer r.ctlMu.Unlock()
	if !r.closed.CompareAndSwap(false, true) {
		return nil
	}
	werr := r.res.poll.wake()
	r.mu.Lock() // wait for a ReadInto to leave
	defer r.mu.Unlock()
	r.cleanup.Stop()
	if err := errors.Join(werr, r.res.close()); err != nil {
		return fmt.Errorf("close perf reader: %w", err)
	}
	return nil
}
