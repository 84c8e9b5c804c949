package record

import (
	"cmp"
	"slices"
	"time"

	"nsprof/symbol"
	"nsprof/unwind"
)

// jitUnwind is the call frame information a process's jitdumps gave for
// the code its JIT made, for the unwinder: Python 3.13's -X perf_jit runs
// each Python function through a trampoline of its own that keeps no
// frame pointer (sub $8,%rsp; call *%rcx), where the frame-pointer walk
// the unwinder falls back on for anonymous memory stopped every stack, and
// writes the trampoline's .eh_frame in its jitdump. The dumps are read as
// they grow, when an address of no file is not covered, at most once per
// jitUnwindRecheck of the samples' time (reading the clock for each frame
// of JIT code would cost as much as a step on some VMs, see leafTimed).
type jitUnwind struct {
	// levels hold the codes read, the oldest first, each level's table
	// made of its codes: a read adds a level, merged with the ones
	// before it while they hold no more codes than it, so that each
	// code is interpreted again a logarithmic number of times, not at
	// every read (a JIT that keeps making code, V8's with
	// --perf-prof-unwinding-info, adds some at most reads).
	levels []jitLevel
	bytes  int // of the codes' .eh_frame, up to maxJITUnwindBytes
	// next is where to read each dump on from (p.jit's order).
	next []int64
	// checked is when they were last read, in samples' time (ns).
	checked int64
	// known are the ranges of all the code the dumps described, with
	// call frame information or without (V8's, walked by frame
	// pointers), sorted and merged: an address of no file outside them
	// is code whose description the JIT has not written yet (see
	// [jitDeferred]).
	known []span
	// reads counts the reads that found codes.
	reads int
}

// knows says whether the dumps described code at pc.
func (j *jitUnwind) knows(pc uint64) bool {
	i, _ := slices.BinarySearchFunc(j.known, pc, func(s span, pc uint64) int {
		switch {
		case s.end <= pc:
			return -1
		case s.start > pc:
			return 1
		}
		return 0
	})
	return i < len(j.known) && j.known[i].start <= pc && pc < j.known[i].end
}

// addKnown adds the ranges of codes to the known ones.
func (j *jitUnwind) addKnown(codes []symbol.JITUnwind) {
	add := make([]span, 0, len(codes))
	for _, c := range codes {
		add = append(add, span{c.Start, c.End})
	}
	slices.SortFunc(add, func(a, b span) int { return cmp.Compare(a.start, b.start) })
	j.known = mergeSpans(j.known, add)
}

// mergeSpans returns the union of a and b, both sorted by start (a also
// merged), sorted and merged: one pass, as a JIT's codes are read a few
// at a time.
func mergeSpans(a, b []span) []span {
	out := make([]span, 0, len(a)+len(b))
	for len(a) > 0 || len(b) > 0 {
		var s span
		if len(b) == 0 || len(a) > 0 && a[0].start <= b[0].start {
			s, a = a[0], a[1:]
		} else {
			s, b = b[0], b[1:]
		}
		if n := len(out); n > 0 && s.start <= out[n-1].end {
			out[n-1].end = max(out[n-1].end, s.end)
			continue
		}
		out = append(out, s)
	}
	return out
}

// jitLevel is codes of a JIT and the table made of them.
type jitLevel struct {
	codes []unwind.JITCode
	table *unwind.Table
}

// find returns the table covering pc, the latest level's first: a later
// code wins, as the JIT reuses freed memory.
func (j *jitUnwind) find(pc uint64) *unwind.Table {
	for i := len(j.levels) - 1; i >= 0; i-- {
		if t := j.levels[i].table; t != nil && t.Covers(pc) {
			return t
		}
	}
	return nil
}

// add adds codes read after those before as a level, merging levels.
func (j *jitUnwind) add(codes []unwind.JITCode) {
	for len(j.levels) > 0 && len(j.levels[len(j.levels)-1].codes) <= len(codes) {
		last := j.levels[len(j.levels)-1]
		codes = append(last.codes, codes...)
		j.levels = j.levels[:len(j.levels)-1]
	}
	t, _ := unwind.JITTable(codes)
	j.levels = append(j.levels, jitLevel{codes: codes, table: t})
}

const (
	// jitUnwindRecheck is how long an address of no file the JIT's call
	// frame information does not cover waits before the dumps are read
	// again: a JIT writes its code's record before running it, but
	// Python buffers its dump (4 KiB at a time).
	jitUnwindRecheck = 20 * time.Millisecond
	// maxJITUnwindBytes bounds the .eh_frame kept for one image's JIT
	// code; code beyond it is walked by frame pointers. Python's is 48
	// bytes a function.
	maxJITUnwindBytes = 8 << 20
)

// jitModule returns the module of JIT code at pc of process p, sampled at
// time at, from the call frame information its jitdumps gave; false when
// they give none for pc.
func (u *dwarfUnwinder) jitModule(p *symProc, pc uint64, at int64) (unwind.Module, bool) {
	if len(p.jit) == 0 {
		return unwind.Module{}, false
	}
	j := &p.jitUnwind
	if t := j.find(pc); t != nil {
		return unwind.Module{Table: t}, true
	}
	if at-j.checked >= int64(jitUnwindRecheck) {
		j.checked = at
		if u.readJITUnwind(p) {
			if t := j.find(pc); t != nil {
				return unwind.Module{Table: t}, true
			}
		}
	}
	if u.jitMissed == 0 && !j.knows(pc) && inSpans(p.other, pc) {
		u.jitMissed = pc
	}
	return unwind.Module{}, false
}

// inSpans says whether a span of spans holds pc.
func inSpans(spans []span, pc uint64) bool {
	for _, s := range spans {
		if pc >= s.start && pc < s.end {
			return true
		}
	}
	return false
}

// readJITUnwind reads what p's jitdumps added since they were last read
// and adds it, and says whether that was new call frame information.
func (u *dwarfUnwinder) readJITUnwind(p *symProc) bool {
	j := &p.jitUnwind
	j.next = append(j.next, make([]int64, max(len(p.jit)-len(j.next), 0))...)
	var added []unwind.JITCode
	for i, d := range p.jit {
		st, err := d.f.Stat()
		if err != nil || st.Size() <= j.next[i] {
			continue
		}
		codes, next, _ := symbol.ParseJITDumpUnwind(d.f, st.Size(), j.next[i])
		j.next[i] = next
		if len(codes) > 0 {
			j.addKnown(codes)
			j.reads++
		}
		for _, c := range codes {
			if c.EHFrame == nil {
				continue // walked by frame pointers
			}
			if j.bytes+len(c.EHFrame) > maxJITUnwindBytes {
				u.jitUnwindDropped++
				continue
			}
			j.bytes += len(c.EHFrame)
			added = append(added, unwind.JITCode{Start: c.Start, End: c.End, EHFrame: c.EHFrame})
		}
	}
	if len(added) == 0 {
		return false
	}
	start := time.Now()
	j.add(added)
	u.timeLoad(start)
	u.jitUnwindReads++
	return true
}
