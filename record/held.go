package record

import (
	"cmp"
	"slices"

	"nsprof/perf"
	"nsprof/proc"
)

// lifetime is when a process was of one kind (recorded, a container's,
// another's): from since to until (0: still running).
type lifetime struct{ since, until int64 }

// lifetimes are the lifetimes of processes of one kind, by pid: a pid
// used again has several, in order.
type lifetimes map[int32][]lifetime

// at reports whether process pid was of l's kind at time t.
func (l lifetimes) at(pid int32, t int64) bool {
	for _, s := range l[pid] {
		if s.since <= t && (s.until == 0 || t <= s.until) {
			return true
		}
	}
	return false
}

// begin records that pid is of l's kind from time t (it execed, or was
// forked or created so), unless it is already then.
func (l lifetimes) begin(pid int32, t int64) {
	if l.at(pid, t) {
		return
	}
	spans := l[pid]
	i, _ := slices.BinarySearchFunc(spans, t, func(s lifetime, t int64) int { return cmp.Compare(s.since, t) })
	l[pid] = slices.Insert(spans, i, lifetime{since: t})
}

// end records that process pid ended at time t: its main thread exited,
// and /proc (fs) lists no other thread of it, whose samples go on.
func (l lifetimes) end(fs proc.FS, pid int32, t int64) {
	spans := l[pid]
	for i := len(spans) - 1; i >= 0; i-- {
		if spans[i].since <= t {
			if spans[i].until == 0 && !threadsLeft(fs, pid) {
				spans[i].until = t
			}
			return
		}
	}
}

// threadsLeft reports whether process pid still has threads other than
// its main one, which exited.
func threadsLeft(fs proc.FS, pid int32) bool {
	tids, err := fs.Tasks(int(pid))
	return err == nil && len(tids) > 1
}

// heldRecords are copies of records whose process was not known when
// they were read, in snapshot snap of the reader, kept until the records
// of the next snapshot were handled (see [perf.Reader.Snapshot]): those
// hold the record that makes the process known, if it exists.
type heldRecords struct {
	held []heldSample
	free []*perf.Record
}

// heldSample is a copy of a record of a process not known when it was
// read, in snapshot snap.
type heldSample struct {
	rec  *perf.Record
	snap uint64
}

// hold keeps a copy of rec, read in snapshot snap.
func (h *heldRecords) hold(rec *perf.Record, snap uint64) {
	var c *perf.Record
	if n := len(h.free); n > 0 {
		c, h.free = h.free[n-1], h.free[:n-1]
	} else {
		c = new(perf.Record)
	}
	copyRecord(c, rec)
	h.held = append(h.held, heldSample{rec: c, snap: snap})
}

// settleUpTo returns the snapshot up to which the held records can be
// decided, as the reader's state allows: after a record of snapshot snap
// was handled, those held from two snapshots before; once the reader
// drained every ring up to snapshot snap (drained), those held from the
// one before. ok is false when there are none.
func (h *heldRecords) settleUpTo(snap uint64, drained bool) (upTo uint64, ok bool) {
	if len(h.held) == 0 || snap < 2 {
		return 0, false
	}
	upTo = snap - 1
	if !drained {
		upTo = snap - 2
	}
	return upTo, h.held[0].snap <= upTo
}

// settle hands decide the records held from snapshots up to snap, in the
// order they were read, and reuses their room after.
func (h *heldRecords) settle(snap uint64, decide func(*perf.Record)) {
	n := 0
	for _, s := range h.held {
		if s.snap > snap {
			break
		}
		n++
		decide(s.rec)
		h.free = append(h.free, s.rec)
	}
	h.held = append(h.held[:0], h.held[n:]...)
}

// copyRecord makes c a copy of rec that shares none of its memory (the
// reader reuses a record's slices for the next).
func copyRecord(c, rec *perf.Record) {
	s := rec.Sample
	s.Callchain = append(c.Sample.Callchain[:0], s.Callchain...)
	s.Regs = append(c.Sample.Regs[:0], s.Regs...)
	s.Stack = append(c.Sample.Stack[:0], s.Stack...)
	s.RawData = append(c.Sample.RawData[:0], s.RawData...)
	m := rec.Mmap
	m.Filename = append(c.Mmap.Filename[:0], m.Filename...)
	cm := rec.Comm
	cm.Comm = append(c.Comm.Comm[:0], cm.Comm...)
	raw := append(c.Raw[:0], rec.Raw...)
	*c = *rec
	c.Sample, c.Mmap, c.Comm, c.Raw = s, m, cm, raw
}
