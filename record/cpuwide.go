package record

import (
	"cmp"
	"slices"

	"nsprof/perf"
	"nsprof/proc"
)

// targetFilter keeps, of the samples of the sampling event opened per
// CPU for every task (perf.Options.SampleCPUWide, which --off-cpu uses
// for a command or -p), those of the recorded processes, and drops and
// counts the others'. The recorded processes are known from the
// records of the per-task events, which only the recorded tasks write:
// a command's exec (COMM), a new process (FORK), a process's end (EXIT
// of its main thread); and, for -p, from the start. A process is
// recorded from its exec or fork to its exit: a sample of its pid before
// (the command before its exec) or after (a pid used again) is
// another's.
//
// A sample can be read before the record that makes its process known,
// when another CPU's ring holds that record: such a sample is held
// until the records of the reader's next snapshot were handled (see
// [perf.Reader.Snapshot]), which hold the record if it exists, then
// kept or dropped.
type targetFilter struct {
	procs map[int32][]lifetime
	held  []heldSample
	free  []*perf.Record
	// dropped counts the samples of other processes; notSample tells
	// the hits of the per-CPU tracepoints, which are not counted.
	dropped   uint64
	notSample func(*perf.Sample) bool
	// fs is /proc, to tell a main thread's exit from its process's.
	fs proc.FS
}

// lifetime is when a process was recorded: from since to until (0: still
// running).
type lifetime struct{ since, until int64 }

// heldSample is a copy of a sample of a process not known when it was
// read, in snapshot snap.
type heldSample struct {
	rec  *perf.Record
	snap uint64
}

// newTargetFilter returns a filter that knows the processes of pids
// from the start (-p; a thread id stands for its process, as it does
// for perf.Processes), and later the processes the records say.
func newTargetFilter(fs proc.FS, pids []int) *targetFilter {
	f := &targetFilter{procs: make(map[int32][]lifetime), fs: fs}
	for _, pid := range processIDs(fs, pids) {
		f.procs[int32(pid)] = []lifetime{{}}
	}
	return f
}

// processIDs returns the ids of the processes of pids, each a process or
// thread id (-p: a thread id stands for its process, as it does for
// perf.Processes); an id /proc does not know is kept as it is.
func processIDs(fs proc.FS, pids []int) []int {
	out := make([]int, 0, len(pids))
	for _, pid := range pids {
		if st, err := fs.ReadStatus(pid); err == nil && st.Tgid > 0 {
			pid = st.Tgid
		}
		out = append(out, pid)
	}
	return out
}

// verdict says what to do with a sample of process pid at time t: keep
// it (a recorded process then), drop it (another's), or hold it (a
// recorded process may be made known by a record not read yet: a new
// process, or a pid used again by one).
type verdict int

const (
	keepSample verdict = iota
	dropSample
	holdSample
)

func (f *targetFilter) verdict(pid int32, t int64) verdict {
	spans, ok := f.procs[pid]
	if !ok {
		return holdSample
	}
	if t < spans[0].since {
		return dropSample // before its exec or fork: what ran before
	}
	for _, s := range spans {
		if s.since <= t && (s.until == 0 || t <= s.until) {
			return keepSample
		}
	}
	if last := spans[len(spans)-1]; last.until != 0 && t > last.until {
		return holdSample // after its exit: maybe a new recorded one
	}
	return dropSample
}

// start records that process pid is recorded from time t: it execed
// (the command) or was forked by a recorded process.
func (f *targetFilter) start(pid int32, t int64) {
	spans := f.procs[pid]
	for _, s := range spans {
		if s.since <= t && (s.until == 0 || t <= s.until) {
			return // known already: a later exec of the same process
		}
	}
	i, _ := slices.BinarySearchFunc(spans, t, func(s lifetime, t int64) int { return cmp.Compare(s.since, t) })
	f.procs[pid] = slices.Insert(spans, i, lifetime{since: t})
}

// exit records that process pid ended at time t: its main thread
// exited, and no other thread of it remains.
func (f *targetFilter) exit(pid int32, t int64) {
	spans := f.procs[pid]
	for i := len(spans) - 1; i >= 0; i-- {
		if spans[i].since <= t {
			if spans[i].until == 0 && !f.threadsLeft(pid) {
				spans[i].until = t
			}
			return
		}
	}
}

// threadsLeft reports whether process pid still has threads other than
// its main one, which exited: its samples go on.
func (f *targetFilter) threadsLeft(pid int32) bool {
	tids, err := f.fs.Tasks(int(pid))
	return err == nil && len(tids) > 1
}

// learn takes the records of the per-task events that start and end
// recorded processes.
func (f *targetFilter) learn(rec *perf.Record) {
	switch rec.Type {
	case perf.RecordComm:
		if c := &rec.Comm; c.Exec && c.PID == c.TID {
			f.start(int32(c.PID), int64(rec.Time()))
		}
	case perf.RecordFork:
		if k := &rec.Task; k.PID != k.PPID {
			f.start(int32(k.PID), int64(k.Time))
		}
	case perf.RecordExit:
		if k := &rec.Task; k.PID == k.TID {
			f.exit(int32(k.PID), int64(k.Time))
		}
	}
}

// take returns whether sample rec, read in snapshot snap, is to be kept
// now; a sample to hold is copied.
func (f *targetFilter) take(rec *perf.Record, snap uint64) bool {
	switch f.verdict(int32(rec.Sample.PID), int64(rec.Sample.Time)) {
	case keepSample:
		return true
	case holdSample:
		f.held = append(f.held, heldSample{rec: f.copyOf(rec), snap: snap})
	default:
		f.drop(rec)
	}
	return false
}

// drop counts rec, another process's, when it is a sample.
func (f *targetFilter) drop(rec *perf.Record) {
	if f.notSample == nil || !f.notSample(&rec.Sample) {
		f.dropped++
	}
}

// settle decides the samples held from snapshots up to snap: keep
// receives those of recorded processes, in the order they were read.
func (f *targetFilter) settle(snap uint64, keep func(*perf.Record)) {
	n := 0
	for _, h := range f.held {
		if h.snap > snap {
			break
		}
		n++
		if f.verdict(int32(h.rec.Sample.PID), int64(h.rec.Sample.Time)) == keepSample {
			keep(h.rec)
		} else {
			f.drop(h.rec)
		}
		f.free = append(f.free, h.rec)
	}
	f.held = append(f.held[:0], f.held[n:]...)
}

// settleRead decides the held samples the reader's state allows: after
// a record of snapshot snap was handled, those held from two snapshots
// before; once the reader drained every ring up to snapshot snap
// (drained), those held from the one before.
func (f *targetFilter) settleRead(snap uint64, drained bool, keep func(*perf.Record)) {
	if len(f.held) == 0 {
		return
	}
	upTo := snap - 1
	if !drained {
		upTo = snap - 2
	}
	if snap >= 2 && f.held[0].snap <= upTo {
		f.settle(upTo, keep)
	}
}

// copyOf returns a copy of sample rec that outlives it.
func (f *targetFilter) copyOf(rec *perf.Record) *perf.Record {
	var c *perf.Record
	if n := len(f.free); n > 0 {
		c, f.free = f.free[n-1], f.free[:n-1]
	} else {
		c = new(perf.Record)
	}
	s := rec.Sample
	s.Callchain = append(c.Sample.Callchain[:0], s.Callchain...)
	s.Regs = append(c.Sample.Regs[:0], s.Regs...)
	s.Stack = append(c.Sample.Stack[:0], s.Stack...)
	s.RawData = append(c.Sample.RawData[:0], s.RawData...)
	c.Type, c.Misc, c.CPU, c.Sample = rec.Type, rec.Misc, rec.CPU, s
	return c
}

// filterSample passes a sample of the per-CPU sampling event through
// the filter: true to handle it now.
func (r *recorder) filterSample(rec *perf.Record) bool {
	return r.filter.take(rec, r.rd.Snapshot())
}

// settleHeld handles the held samples the filter can now decide (and
// the held records of [nsTarget]): after
// a record was handled (drained false), or once the reader drained its
// rings; all of them at the end (final).
func (r *recorder) settleHeld(drained, final bool) {
	if n := r.nst; n != nil && len(n.held) > 0 {
		if final {
			n.settle(^uint64(0), r.handleRecord)
		} else {
			n.settleRead(r.rd.Snapshot(), drained, r.handleRecord)
		}
	}
	f := r.filter
	if f == nil || len(f.held) == 0 {
		return
	}
	keep := r.sampleCPUWide
	if final {
		f.settle(^uint64(0), keep)
		return
	}
	f.settleRead(r.rd.Snapshot(), drained, keep)
}
