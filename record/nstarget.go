package record

import (
	"cmp"
	"slices"

	"nsprof/perf"
	"nsprof/proc"
)

// nsTarget keeps, of the records of events opened per CPU for every task,
// those of the processes of one container told by its PID namespace: how
// record --container follows a container without a cgroup of its own
// (rootless podman where cgroups are v1), whose processes nothing else
// tells apart. Following its processes and their children, as -p does,
// missed what podman exec adds: such a command's parent is the runtime's,
// on the host, which entered the container's namespaces before it forked.
//
// A process is the container's from the start when the recorder finds it
// there, or from its fork by one of the container's processes, or from
// the NAMESPACES record of its creation (the kernel's, with the PID
// namespace the new task is in: podman exec's command), until it exits.
// It is another's from the start when /proc says so, or from such a
// record naming another namespace (its pid, used again, is the
// container's once one of the ways above says so). Samples and the other records of
// the container's processes are handled, the others' dropped (the samples
// counted). A record of a process not known yet (its creation may be in
// another CPU's ring, not read yet) is held until the records of the
// reader's next snapshot were handled, as [targetFilter] holds samples.
type nsTarget struct {
	// pidNS are the container's PID namespaces, by inode: those of its
	// processes when recording began.
	pidNS   map[uint64]bool
	members lifetimes
	others  lifetimes
	// heldRecords are the records of processes not known yet, heldBy
	// their number by process.
	heldRecords
	heldBy map[int32]int
	// dropped counts the samples of other processes; notSample tells
	// the hits of the per-CPU tracepoints, which are not counted.
	dropped   uint64
	notSample func(*perf.Sample) bool
	// fs is /proc, to tell a main thread's exit from its process's.
	fs proc.FS
}

// newNSTarget returns a filter for the container whose processes are
// members; every other process /proc lists is another's. It returns
// false when the members share this process's PID namespace (a
// container run with --pid=host): their namespace tells nothing.
func newNSTarget(fs proc.FS, members []int) (*nsTarget, bool) {
	self, err := fs.NamespaceID(proc.Self, "pid")
	if err != nil {
		return nil, false
	}
	f := &nsTarget{pidNS: make(map[uint64]bool), members: make(lifetimes), others: make(lifetimes), heldBy: make(map[int32]int), fs: fs}
	for _, pid := range members {
		ns, err := fs.NamespaceID(pid, "pid")
		if err != nil {
			continue // gone already
		}
		if ns == self {
			return nil, false
		}
		f.pidNS[ns] = true
		f.members[int32(pid)] = []lifetime{{}}
	}
	if len(f.pidNS) == 0 {
		return nil, false
	}
	// The idle task (pid 0) and every process of another namespace.
	f.others[0] = []lifetime{{}}
	pids, _ := fs.PIDs()
	for _, pid := range pids {
		if _, ok := f.members[int32(pid)]; ok {
			continue
		}
		if ns, err := fs.NamespaceID(pid, "pid"); err == nil && f.pidNS[ns] {
			f.members[int32(pid)] = []lifetime{{}} // started since the container was found
		} else {
			f.others[int32(pid)] = []lifetime{{}}
		}
	}
	return f, true
}

// recordPID returns the process a record is about, false for a record of
// no process (lost records, throttling, and others the recorder takes
// whole).
func recordPID(rec *perf.Record) (int32, bool) {
	switch rec.Type {
	case perf.RecordSample, perf.RecordMmap, perf.RecordMmap2, perf.RecordComm, perf.RecordFork, perf.RecordExit, perf.RecordSwitch, perf.RecordSwitchCPUWide:
		pid, _ := rec.PIDTID()
		return int32(pid), true
	case perf.RecordNamespaces:
		return int32(rec.Namespaces.PID), true
	}
	return 0, false
}

// recordTime returns the time of rec: a FORK's or EXIT's own.
func recordTime(rec *perf.Record) int64 {
	if rec.Type == perf.RecordFork || rec.Type == perf.RecordExit {
		return int64(rec.Task.Time)
	}
	return int64(rec.Time())
}

// verdict says what to do with a record of process pid at time t.
func (f *nsTarget) verdict(pid int32, t int64) verdict {
	switch {
	case f.members.at(pid, t):
		return keepSample
	case f.others.at(pid, t):
		return dropSample
	}
	return holdSample
}

// take decides rec, read in snapshot snap: handle receives it now when
// it is of the container's processes (with the records held before of a
// process it makes the container's); it is dropped when another's, else
// held.
func (f *nsTarget) take(rec *perf.Record, snap uint64, handle func(*perf.Record)) {
	pid, ok := recordPID(rec)
	if !ok {
		handle(rec)
		return
	}
	t := recordTime(rec)
	switch rec.Type {
	case perf.RecordFork:
		k := &rec.Task
		if k.PID != k.PPID && f.verdict(int32(k.PPID), t) == keepSample {
			f.members.begin(pid, t) // forked by one of the container's
		}
	case perf.RecordNamespaces:
		if n := &rec.Namespaces; n.PID == n.TID {
			if f.pidNS[n.Links[perf.NamespacePID].Inode] {
				f.members.begin(pid, t)
			} else if f.verdict(pid, t) != keepSample {
				f.others.begin(pid, t)
			}
		}
	}
	v := f.verdict(pid, t)
	if v == holdSample {
		f.hold(rec, snap)
		f.heldBy[pid]++
		return
	}
	f.decide(pid, rec, handle)
}

// decide handles rec, of process pid, when it is of the container's
// processes and drops it otherwise, with the records of pid held before
// that are no longer in doubt: all in the order of their times (a new
// process's COMM read before its FORK from another CPU's ring).
func (f *nsTarget) decide(pid int32, rec *perf.Record, handle func(*perf.Record)) {
	if f.heldBy[pid] == 0 {
		f.handleOrDrop(pid, rec, handle)
		return
	}
	var mine []*perf.Record
	n := 0
	for _, h := range f.held {
		if p, _ := recordPID(h.rec); p == pid && f.verdict(pid, recordTime(h.rec)) != holdSample {
			mine = append(mine, h.rec)
			continue
		}
		f.held[n] = h
		n++
	}
	clear(f.held[n:])
	f.held = f.held[:n]
	if f.heldBy[pid] -= len(mine); f.heldBy[pid] <= 0 {
		delete(f.heldBy, pid)
	}
	mine = append(mine, rec)
	slices.SortStableFunc(mine, func(a, b *perf.Record) int { return cmp.Compare(recordTime(a), recordTime(b)) })
	for _, m := range mine {
		f.handleOrDrop(pid, m, handle)
		if m != rec {
			f.free = append(f.free, m)
		}
	}
}

// handleOrDrop hands rec, of process pid, to handle when it is of the
// container's processes then, and drops it otherwise. The exit of a
// process's main thread ends the container's process (unless threads of
// it remain), and makes another's forgotten, so that a recording of a
// busy host holds none of those gone: a record of it read later is
// held, then dropped.
func (f *nsTarget) handleOrDrop(pid int32, rec *perf.Record, handle func(*perf.Record)) {
	t := recordTime(rec)
	keep := f.verdict(pid, t) == keepSample
	if keep {
		handle(rec)
	} else {
		f.drop(rec)
	}
	if rec.Type == perf.RecordExit && rec.Task.PID == rec.Task.TID {
		if keep {
			f.members.end(f.fs, pid, t)
		} else {
			delete(f.others, pid)
		}
	}
}

// settle decides the records held from snapshots up to snap: handle
// receives those of the container's processes, in the order they were
// read; those of processes still not known are dropped, and those
// processes taken to be another's from then on.
func (f *nsTarget) settle(snap uint64, handle func(*perf.Record)) {
	f.heldRecords.settle(snap, func(rec *perf.Record) {
		pid, _ := recordPID(rec)
		if t := recordTime(rec); f.verdict(pid, t) == holdSample {
			// Not known by now: not the container's (what makes one
			// known was written before its records, and has been
			// read). Its later records are dropped without a hold.
			f.others.begin(pid, t)
		}
		f.handleOrDrop(pid, rec, handle)
		if f.heldBy[pid]--; f.heldBy[pid] <= 0 {
			delete(f.heldBy, pid)
		}
	})
}

// settleRead decides the held records the reader's state allows (see
// [heldRecords.settleUpTo]).
func (f *nsTarget) settleRead(snap uint64, drained bool, handle func(*perf.Record)) {
	if upTo, ok := f.settleUpTo(snap, drained); ok {
		f.settle(upTo, handle)
	}
}

// drop counts rec, another process's, when it is a sample.
func (f *nsTarget) drop(rec *perf.Record) {
	if rec.Type == perf.RecordSample && (f.notSample == nil || !f.notSample(&rec.Sample)) {
		f.dropped++
	}
}

// alive reports whether any of the container's processes is running, as
// far as /proc tells.
func (f *nsTarget) alive() bool {
	for pid, spans := range f.members {
		if spans[len(spans)-1].until == 0 {
			if _, err := f.fs.NamespaceID(int(pid), "pid"); err == nil {
				return true
			}
		}
	}
	return false
}
