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
// jitUnwindRecheck.
type jitUnwind struct {
	table *unwind.Table
	codes []unwind.JITCode
	bytes int // of the codes' .eh_frame, up to maxJITUnwindBytes
	// next is where to read each dump on from (p.jit's order).
	next    []int64
	checked time.Time
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

// jitModule returns the module of JIT code at pc of process p, from the
// call frame information its jitdumps gave; false when they give none
// for pc.
func (u *dwarfUnwinder) jitModule(p *symProc, pc uint64) (unwind.Module, bool) {
	if len(p.jit) == 0 {
		return unwind.Module{}, false
	}
	j := &p.jitUnwind
	if j.table != nil && j.table.Covers(pc) {
		return unwind.Module{Table: j.table}, true
	}
	if now := time.Now(); now.Sub(j.checked) >= jitUnwindRecheck {
		j.checked = now
		if u.readJITUnwind(p) && j.table.Covers(pc) {
			return unwind.Module{Table: j.table}, true
		}
	}
	return unwind.Module{}, false
}

// readJITUnwind reads what p's jitdumps added since they were last read
// and remakes the table when that is new call frame information.
func (u *dwarfUnwinder) readJITUnwind(p *symProc) bool {
	j := &p.jitUnwind
	j.next = append(j.next, make([]int64, max(len(p.jit)-len(j.next), 0))...)
	added := false
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
			j.codes = append(j.codes, unwind.JITCode{Start: c.Start, End: c.End, EHFrame: c.EHFrame})
			added = true
		}
	}
	if !added {
		return false
	}
	start := time.Now()
	j.table, _ = unwind.JITTable(j.codes)
	u.timeLoad(start)
	u.jitUnwindReads++
	return j.table != nil
}
