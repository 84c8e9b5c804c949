package symbol

import (
	"debug/dwarf"
	"slices"
	"sort"
)

// FrameRange is a run of link-time addresses, [Lo, Hi), that have the
// same source frames.
type FrameRange struct {
	Lo, Hi uint64
	Frames []Frame
}

// FrameRanges returns the source frames of every address of [lo, hi) at
// once, as runs of addresses with the same frames, in address order, at
// most max of them: [Symbols.Frames] gives each address in a run the
// run's frames, and nil to an address of [lo, hi) in none. ok is false
// when it cannot tell for the whole range: more than max runs, a range
// across Go and other code, or across compilation units. It reads what
// Frames would read for the addresses of the range, and no more.
//
// A caller keeping the frames of a whole function (a symbol's range)
// can answer any later address in it without the line tables.
func (s *Symbols) FrameRanges(lo, hi uint64, max int) (runs []FrameRange, ok bool) {
	if s == nil || lo >= hi {
		return nil, false
	}
	if s.golines != nil {
		if fn, ok := s.golines.funcAt(lo); ok {
			if hi > fn.end {
				return nil, false
			}
			return s.golines.frameRuns(fn, lo, hi, max)
		}
		if s.golines.entryIn(lo, hi) {
			return nil, false
		}
	}
	if s.lines == nil {
		return nil, true
	}
	for _, r := range s.plt {
		if lo < r.end && r.start < hi {
			// Frames answers nothing in a PLT; a range partly in one
			// is not a function's.
			return nil, lo >= r.start && hi <= r.end
		}
	}
	return s.lines.frameRuns(lo, hi, max)
}

// ForgetUnits lets go of the compilation units Frames has read (their
// functions, inlined calls and line rows), which it reads again when
// asked: for going over all the functions of a large file a batch at a
// time.
func (s *Symbols) ForgetUnits() {
	if s == nil || s.lines == nil {
		return
	}
	x := s.lines.index()
	if x == nil {
		return
	}
	s.lines.inlMu.Lock()
	defer s.lines.inlMu.Unlock()
	clear(x.read)
	x.scopes = 0
}

// ByUnit splits the link-time addresses vaddrs into groups of one
// compilation unit each, so that a caller can go over them a unit at a
// time and let each go after ([Symbols.ForgetUnits]): link-time
// optimization makes units of thousands of functions, read again for
// each batch of functions that is not a unit's. Addresses of no unit
// (or whose DWARF is not read yet: see [Symbols.PrepareDWARF]) make the
// last group. The order within a group is kept.
func (s *Symbols) ByUnit(vaddrs []uint64) [][]uint64 {
	if s == nil || s.lines == nil {
		return [][]uint64{vaddrs}
	}
	x := s.lines.index()
	if x == nil {
		return [][]uint64{vaddrs}
	}
	s.lines.inlMu.Lock()
	defer s.lines.inlMu.Unlock()
	groups := make(map[dwarf.Offset]int)
	var out [][]uint64
	var none []uint64
	for _, va := range vaddrs {
		_, off, ok := x.units.unit(va)
		if !ok {
			none = append(none, va)
			continue
		}
		i, seen := groups[off]
		if !seen {
			i = len(out)
			groups[off] = i
			out = append(out, nil)
		}
		out[i] = append(out[i], va)
	}
	if len(none) > 0 {
		out = append(out, none)
	}
	return out
}

// HasGoLineTable reports whether the object has a Go line table.
func (s *Symbols) HasGoLineTable() bool { return s != nil && s.golines != nil }

// InGoLineTable reports whether Frames answers vaddr from a Go binary's
// line table (which a caller can read again cheaply: it is read from the
// file in pages as functions are looked up) rather than from DWARF.
func (s *Symbols) InGoLineTable(vaddr uint64) bool {
	if s == nil || s.golines == nil {
		return false
	}
	_, ok := s.golines.funcAt(vaddr)
	return ok
}

// entryIn reports whether a Go function may start in (lo, hi): true when
// the function table cannot be read.
func (t *goLineTable) entryIn(lo, hi uint64) bool {
	if t.nfunc == 0 || hi <= t.text {
		return false
	}
	if lo < t.text {
		return true
	}
	off := lo - t.text
	i := sort.Search(t.nfunc, func(i int) bool {
		e, ok := t.u32(t.pcln, uint64(i)*8)
		return !ok || uint64(e) > off
	})
	if i == t.nfunc {
		return false
	}
	e, ok := t.u32(t.pcln, uint64(i)*8)
	return !ok || t.text+uint64(e) < hi
}

// pcStep is one run of a decoded pcvalue table: the value up to next.
type pcStep struct {
	next uint64
	val  int32
}

// maxPCSteps bounds the runs of one pcvalue table frameRuns decodes.
const maxPCSteps = 1 << 20

// frameRuns returns the runs of [lo, hi), within fn, of one set of
// frames. Each pcvalue table of fn is decoded once, and frames are made
// by [goLineTable.framesIn] as [goLineTable.frames] makes them, from
// lookups in the decoded steps instead of decoding again for each pc.
func (t *goLineTable) frameRuns(fn goFunc, lo, hi uint64, max int) ([]FrameRange, bool) {
	tabs := make(map[uint32][]pcStep)
	full := false
	decode := func(off uint32) []pcStep {
		st, ok := tabs[off]
		if ok {
			return st
		}
		if st, ok = t.decodeSteps(fn, off, nil); !ok {
			full = true
		}
		tabs[off] = st
		return st
	}
	val := func(off uint32, pc uint64) int32 { return stepAt(decode(off), pc) }
	type strKey struct{ start, off uint64 }
	strs := make(map[strKey]string)
	str := func(b goSpan, off uint64) string {
		k := strKey{b.start, off}
		s, ok := strs[k]
		if !ok {
			s = cstring(b, off)
			strs[k] = s
		}
		return s
	}
	breaks := []uint64{lo}
	tables := []uint32{fn.pcln, fn.pcfile}
	if fn.hasInl {
		tables = append(tables, fn.inlIndex)
	}
	for _, off := range tables {
		for _, s := range decode(off) {
			if s.next > lo && s.next < hi {
				breaks = append(breaks, s.next)
			}
		}
	}
	if full {
		return nil, false
	}
	slices.Sort(breaks)
	breaks = slices.Compact(breaks)
	if len(breaks) > max {
		return nil, false
	}
	var runs []FrameRange
	for i, b := range breaks {
		end := hi
		if i+1 < len(breaks) {
			end = breaks[i+1]
		}
		runs = appendRun(runs, b, end, t.framesIn(fn, b, val, str))
	}
	return runs, true
}

// appendRun appends the run [lo, hi) of frames fr to runs, joining it to
// the last when that ends at lo with the same frames; a run of no frames
// is left out.
func appendRun(runs []FrameRange, lo, hi uint64, fr []Frame) []FrameRange {
	if len(fr) == 0 {
		return runs
	}
	if n := len(runs); n > 0 && runs[n-1].Hi == lo && slices.Equal(runs[n-1].Frames, fr) {
		runs[n-1].Hi = hi
		return runs
	}
	return append(runs, FrameRange{Lo: lo, Hi: hi, Frames: fr})
}

// frameRuns returns the runs of [lo, hi) of one set of frames from the
// compilation unit holding lo, which must hold all of the range: the
// frames change only where a line row, a function or an inlined call
// begins or ends, and each run's are made by [inlineIndex.frames].
func (t *lineTable) frameRuns(lo, hi uint64, max int) ([]FrameRange, bool) {
	x := t.index()
	if x == nil {
		return nil, true // Frames finds nothing anywhere
	}
	t.inlMu.Lock()
	defer t.inlMu.Unlock()
	if x.scopes >= maxInlineScopes {
		// Inlined calls of units read from now on are left out, as
		// another read of fewer units would not leave them.
		return nil, false
	}
	// No more of the DWARF is read than Frames read for the range's
	// addresses asked before: the units .debug_aranges gives, or all
	// of them if one was missing there.
	u := x.unitAt(lo, false)
	if u == nil {
		// Code no unit covers (hand-written assembly without line
		// information) has no frames, when that holds at every
		// address of it, and all units were looked at.
		if x.full != nil || hi-lo > uint64(max) {
			return nil, false
		}
		for pc := lo; pc < hi; pc++ {
			if x.unitAt(pc, false) != nil {
				return nil, false
			}
		}
		return nil, true
	}
	if x.unitAt(hi-1, false) != u {
		return nil, false
	}
	breaks := []uint64{lo}
	add := func(a uint64) {
		if a > lo && a < hi {
			breaks = append(breaks, a)
		}
	}
	i := sort.Search(len(u.rows), func(i int) bool { return u.rows[i].addr > lo })
	for ; i < len(u.rows) && u.rows[i].addr < hi; i++ {
		add(u.rows[i].addr)
	}
	for k := range u.subs {
		sp := &u.subs[k]
		if sp.hi <= lo || sp.lo >= hi {
			continue
		}
		add(sp.lo)
		add(sp.hi)
		for _, sc := range *sp.inline {
			add(sc.lo)
			add(sc.hi)
		}
	}
	slices.Sort(breaks)
	breaks = slices.Compact(breaks)
	if len(breaks) > max {
		return nil, false
	}
	var runs []FrameRange
	for i, b := range breaks {
		if x.unitAt(b, false) != u {
			return nil, false
		}
		end := hi
		if i+1 < len(breaks) {
			end = breaks[i+1]
		}
		runs = appendRun(runs, b, end, x.frames(b))
	}
	return runs, true
}
