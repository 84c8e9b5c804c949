package record

import (
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
	return unwind.Module{}, false
}

// readJITUnwind reads what p's jitdumps added since they were last read
// and adds it when that is new call frame information.
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
		for _, c := range codes {
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
