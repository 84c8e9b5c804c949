package record

import (
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
	procs lifetimes
	heldRecords
	// dropped counts the samples of other processes; notSample tells
	// the hits of the per-CPU tracepoints, which are not counted.
	dropped   uint64
	notSample func(*perf.Sample) bool
	// fs is /proc, to tell a main thread's exit from its process's.
	fs proc.FS
}

// newTargetFilter returns a filter that knows the processes of pids
// from the start (-p; a thread id stands for its process, as it does
// for perf.Processes), and later the processes the records say.
func newTargetFilter(fs proc.FS, pids []int) *targetFilter {
	f := &targetFilter{procs: make(lifetimes), fs: fs}
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
	if f.procs.at(pid, t) {
		return keepSample
	}
	if last := spans[len(spans)-1]; last.until != 0 && t > last.until {
		return holdSample // after its exit: maybe a new recorded one
	}
	return dropSample
}

// start records that process pid is recorded from time t: it execed
// (the command) or was forked by a recorded process; a later exec of the
// same process changes nothing.
func (f *targetFilter) start(pid int32, t int64) { f.procs.begin(pid, t) }

// exit records that process pid ended at time t: its main thread
// exited, and no other thread of it remains.
func (f *targetFilter) exit(pid int32, t int64) { f.procs.end(f.fs, pid, t) }

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
		f.hold(rec, snap)
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
	f.heldRecords.settle(snap, func(rec *perf.Record) {
		if f.verdict(int32(rec.Sample.PID), int64(rec.Sample.Time)) == keepSample {
			keep(rec)
		} else {
			f.drop(rec)
		}
	})
}

// settleRead decides the held samples the reader's state allows (see
// [heldRecords.settleUpTo]).
func (f *targetFilter) settleRead(snap uint64, drained bool, keep func(*perf.Record)) {
	if upTo, ok := f.settleUpTo(snap, drained); ok {
		f.settle(upTo, keep)
	}
}

// filterSample passes a sample of the per-CPU sampling event through
// the filter: true to handle it now.
func (r *recorder) filterSample(rec *perf.Record) bool {
	return r.filter.take(rec, r.rd.Snapshot())
}

// settleHeld handles the held samples the filter can now decide, and the
// held records of [nsTarget]: after a record was handled (drained
// false), or once the reader drained its rings; all of them at the end
// (final).
func (r *recorder) settleHeld(drained, final bool) {
	if final {
		r.settleHeldAt(^uint64(0), false)
		return
	}
	r.settleHeldAt(r.rd.Snapshot(), drained)
}

// settleHeldAt handles the held records that can be decided once the
// records of snapshot snap were handled (drained: all of them).
func (r *recorder) settleHeldAt(snap uint64, drained bool) {
	if n := r.nst; n != nil && len(n.held) > 0 {
		if snap == ^uint64(0) {
			n.settle(snap, r.handleRecord)
		} else {
			n.settleRead(snap, drained, r.handleRecord)
		}
	}
	if f := r.filter; f != nil && len(f.held) > 0 {
		if snap == ^uint64(0) {
			f.settle(snap, r.sampleCPUWide)
		} else {
			f.settleRead(snap, drained, r.sampleCPUWide)
		}
	}
}
