package symbol

import (
	"cmp"
	"debug/dwarf"
	"slices"
	"sort"
	"sync"
)

// Frame is one source-level frame at an address: a function and where
// the code at the address is in it.
type Frame struct {
	// Function is the function's name, demangled; empty when DWARF gives
	// none.
	Function string
	File     string
	Line     int
}

// Limits on what a file's .debug_info may make us hold: a hostile or
// huge file gets its first inline scopes, not unbounded memory.
const (
	maxInlineScopes = 1 << 22
	maxDIEDepth     = 256
)

// subprogram is one address range of a function in .debug_info and the
// inlined calls in it.
type subprogram struct {
	lo, hi uint64
	name   string
	inline *[]inlineScope // shared by the ranges of one function
}

// inlineScope is one address range of an inlined call: the code of
// function name, inlined at callFile:callLine of its enclosing function
// or inlined call; depth counts the inlined calls it is nested in, from 1.
type inlineScope struct {
	lo, hi   uint64
	depth    int
	name     string
	callFile string
	callLine int
}

// Frames returns the source-level frames at the link-time address vaddr,
// innermost first: the functions inlined there, each with the file and
// line it has reached, then the function the code was compiled into,
// with the line of the outermost inlined call (or of vaddr itself).
//
// The Go code of a Go binary is answered from its line table and inline
// trees, which even stripped binaries keep and which agree with its DWARF.
// Other code is answered from DWARF: that of the file the symbols came
// from, read on first use, and of each compilation unit only when an
// address falls in it. Frames is nil where neither says anything about
// vaddr.
func (s *Symbols) Frames(vaddr uint64) []Frame {
	if s == nil {
		return nil
	}
	if s.golines != nil {
		if fr := s.golines.frames(vaddr); fr != nil {
			return fr
		}
	}
	if s.lines == nil || inPLT(s.plt, vaddr) {
		return nil
	}
	return s.lines.frames(vaddr)
}

func (t *lineTable) frames(pc uint64) []Frame {
	x := t.index()
	if x == nil {
		return nil
	}
	t.inlMu.Lock()
	defer t.inlMu.Unlock()
	return x.frames(pc)
}

// PrepareFrames tells s the link-time addresses [Symbols.Frames] will be
// asked about, so that the compilation units holding them are read at
// once (and no others, when the file has .debug_aranges).
func (s *Symbols) PrepareFrames(vaddrs []uint64) { s.prepare(vaddrs, true) }

// PrepareDWARF reads the DWARF holding the compilation units of the
// link-time addresses vaddrs in one pass, as [Symbols.PrepareFrames]
// does, but not the units themselves: Frames reads each as it is asked,
// and [Symbols.ForgetUnits] lets them go, while their DWARF stays.
func (s *Symbols) PrepareDWARF(vaddrs []uint64) { s.prepare(vaddrs, false) }

func (s *Symbols) prepare(vaddrs []uint64, units bool) {
	if s == nil || s.lines == nil {
		return
	}
	if len(s.plt) > 0 {
		// PLT stubs lie outside every unit's .debug_aranges: asking for
		// them would read the whole DWARF and find no unit still.
		vaddrs = slices.DeleteFunc(slices.Clone(vaddrs), func(a uint64) bool { return inPLT(s.plt, a) })
	}
	if s.golines != nil {
		// The Go code needs no DWARF.
		vaddrs = slices.DeleteFunc(slices.Clone(vaddrs), func(a uint64) bool {
			_, ok := s.golines.funcAt(a)
			return ok
		})
		if len(vaddrs) == 0 {
			return
		}
	}
	x := s.lines.index()
	if x == nil {
		return
	}
	s.lines.inlMu.Lock()
	defer s.lines.inlMu.Unlock()
	x.prepare(vaddrs, units)
}

// prepare reads the units of pcs at once (with units; else only the
// DWARF holding them). When .debug_aranges leaves out one of them, the
// whole DWARF is read now, as the first lookup of it would: reading the
// units of the others first would inflate .debug_info twice.
func (x *inlineIndex) prepare(pcs []uint64, units bool) {
	if sp, ok := x.units.(*sparseUnits); ok && x.full != nil {
		// The units, then the abstract origins they lead to, are read
		// from one stream.
		defer sp.hold()()
		for _, pc := range pcs {
			if _, ok := findArange(sp.aranges, pc); !ok {
				x.toFull()
				break
			}
		}
	}
	x.units.prepare(pcs)
	if units {
		x.readUnits(pcs)
	}
}

// readUnits reads the units of pcs not read yet and names their
// functions together: the abstract origins of all of them are read in
// one pass per link of their chains, where naming each unit on its own
// made .debug_info again for each (and soon ran out of rebuilds).
func (x *inlineIndex) readUnits(pcs []uint64) {
	var units []*unitIndex
	var later []pendingName
	defer func() {
		recover() // what was read is kept, and named; Frames reads the rest
		x.name(units, later)
	}()
	for _, pc := range pcs {
		d, off, ok := x.units.unit(pc)
		if !ok || x.read[off] != nil {
			continue
		}
		u, names, _ := x.readUnit(d, off)
		x.read[off] = u
		units = append(units, u)
		later = append(later, names...)
	}
}

// name resolves the names later asks for, sets them, and sorts the
// functions of units, which later points into. On malformed input the
// names not found stay empty.
func (x *inlineIndex) name(units []*unitIndex, later []pendingName) {
	defer func() {
		recover()
		for _, u := range units {
			slices.SortStableFunc(u.subs, func(a, b subprogram) int { return cmp.Compare(a.lo, b.lo) })
		}
	}()
	// By the file the entries are of: this one's, or a .dwo's.
	refs := map[*dieNames][]dieRef{}
	for _, p := range later {
		n := cmp.Or(p.names, x.names)
		refs[n] = append(refs[n], p.ref)
	}
	for n, r := range refs {
		n.resolve(r)
	}
	for _, p := range later {
		name := cmp.Or(p.names, x.names).cache[p.ref]
		if p.inline == nil {
			for i := p.lo; i < p.hi; i++ {
				p.unit.subs[i].name = name
			}
			continue
		}
		for i := p.lo; i < p.hi; i++ {
			(*p.inline)[i].name = name
		}
	}
}

// index returns the inline index, made on first use: over the units that
// addresses fall in when the file has .debug_aranges, else over the whole
// DWARF. nil when the file has no usable DWARF.
func (t *lineTable) index() *inlineIndex {
	t.inlOnce.Do(func() {
		if f, err := t.openFile(); err != nil {
			t.unread.Store(true)
		} else {
			u, err := f.sparseUnits(t.openFile)
			f.Close()
			if err == nil && u != nil {
				t.inl = newInlineIndex(u, func() dwarfUnits {
					if d := u.all(); d != nil {
						return newFullUnits(d)
					}
					if d := t.data(); d != nil {
						return newFullUnits(d)
					}
					return nil
				}, t.altData)
				t.inl.split = t.splitUnits()
				return
			}
		}
		if d := t.data(); d != nil {
			t.inl = newInlineIndex(newFullUnits(d), nil, t.altData)
			t.inl.split = t.splitUnits()
		}
	})
	return t.inl
}

// splitUnits returns what reads the .dwo files of t's skeleton units;
// nil when t searches none. A skeleton whose .dwo is not found makes t
// count as unread ([Symbols.LinesUnread]): its frames lack their
// inlined calls.
func (t *lineTable) splitUnits() *splitUnits {
	if t.findDWO == nil {
		return nil
	}
	var once sync.Once
	var info, addr []byte
	var err error
	return &splitUnits{
		find:    t.findDWO,
		findDWP: t.findDWP,
		main: func() ([]byte, []byte, error) {
			once.Do(func() {
				var f *File
				if f, err = t.openFile(); err != nil {
					return
				}
				defer f.Close()
				if info, err = f.section(".debug_info", maxDWARFSize); err == nil {
					addr, err = f.section(".debug_addr", maxDWARFSize)
				}
			})
			return info, addr, err
		},
		seen: func() { t.sawSplit.Store(true) },
		missed: func() {
			t.dwoMissing.Add(1)
			t.unread.Store(true)
		},
	}
}

// inlineIndex finds the compilation unit of an address and reads its
// functions, inlined calls and line rows the first time.
type inlineIndex struct {
	units dwarfUnits
	// split reads the .dwo files of skeleton units; nil when none is
	// searched.
	split  *splitUnits
	full   func() dwarfUnits // for addresses units has no unit for; nil if units is the whole DWARF
	names  *dieNames
	read   map[dwarf.Offset]*unitIndex
	scopes int // inline scopes read so far, bounded by maxInlineScopes
}

// unitIndex is what one compilation unit says about its addresses.
type unitIndex struct {
	subs  []subprogram // sorted by lo
	rows  []lineRow    // sorted by address
	files []string
}

// newInlineIndex returns the index of the units u, or of full when u
// has none for an address; alt, when not nil, gives the supplementary
// file's DWARF the units' entries may refer to.
func newInlineIndex(u dwarfUnits, full func() dwarfUnits, alt func() *altDWARF) *inlineIndex {
	x := &inlineIndex{units: u, full: full, read: make(map[dwarf.Offset]*unitIndex)}
	x.names = &dieNames{entry: x.entry, prepare: x.prepareEntries, alt: alt, cache: make(map[dieRef]string)}
	return x
}

// toFull makes the whole DWARF answer from now on, when units is only
// some of it; it reports whether it did.
func (x *inlineIndex) toFull() bool {
	if x.full == nil {
		return false
	}
	f := x.full()
	x.full = nil
	if f == nil {
		return false
	}
	x.units = f
	return true
}

// entry returns DWARF data holding the entry at off. When the units read
// so far cannot give it (.debug_info made again too often), the whole
// DWARF is read: an abstract origin left unread would leave its inlined
// calls unnamed.
func (x *inlineIndex) entry(off dwarf.Offset) *dwarf.Data {
	if d := x.units.entry(off); d != nil {
		return d
	}
	if x.toFull() {
		return x.units.entry(off)
	}
	return nil
}

func (x *inlineIndex) prepareEntries(offs []dwarf.Offset) { x.units.prepareEntries(offs) }

// unit returns the compilation unit holding pc, read on first use; nil
// when no unit covers pc.
func (x *inlineIndex) unit(pc uint64) (u *unitIndex) { return x.unitAt(pc, true) }

// unitAt is unit; without whole, an address .debug_aranges leaves out
// gets no unit rather than the whole DWARF read to look for one.
func (x *inlineIndex) unitAt(pc uint64, whole bool) (u *unitIndex) {
	defer func() {
		if recover() != nil {
			u = nil
		}
	}()
	d, off, ok := x.units.unit(pc)
	if !ok && x.full != nil && whole {
		// .debug_aranges need not list every unit (some compilers leave
		// it out): ask the whole DWARF, once read, from now on.
		if x.toFull() {
			d, off, ok = x.units.unit(pc)
		}
	}
	if !ok {
		return nil
	}
	if u = x.read[off]; u == nil {
		var later []pendingName
		u, later, _ = x.readUnit(d, off)
		x.read[off] = u
		x.name([]*unitIndex{u}, later)
	}
	return u
}

func (x *inlineIndex) frames(pc uint64) []Frame {
	u := x.unit(pc)
	if u == nil {
		return nil
	}
	file, line, hasLine := findLine(u.rows, u.files, pc)
	j := sort.Search(len(u.subs), func(j int) bool { return u.subs[j].lo > pc }) - 1
	if j < 0 || pc >= u.subs[j].hi {
		if !hasLine {
			return nil
		}
		return []Frame{{File: file, Line: line}}
	}
	sp := &u.subs[j]
	var in []*inlineScope
	for k := range *sp.inline {
		sc := &(*sp.inline)[k]
		if sc.lo <= pc && pc < sc.hi {
			in = append(in, sc)
		}
	}
	// Innermost first; at equal depth (overlapping siblings in a
	// malformed file) the narrower scope.
	slices.SortStableFunc(in, func(a, b *inlineScope) int {
		if c := cmp.Compare(b.depth, a.depth); c != 0 {
			return c
		}
		return cmp.Compare(a.hi-a.lo, b.hi-b.lo)
	})
	out := make([]Frame, 0, len(in)+1)
	for _, sc := range in {
		out = append(out, Frame{Function: sc.name, File: file, Line: line})
		file, line = sc.callFile, sc.callLine
	}
	return append(out, Frame{Function: sp.name, File: file, Line: line})
}

// pendingName is a name a unit's functions or inlined calls take from
// the entry at ref: that of unit.subs[lo:hi], or of (*inline)[lo:hi]
// when inline is set.
type pendingName struct {
	ref    dieRef
	unit   *unitIndex
	inline *[]inlineScope
	lo, hi int
	// names resolves ref: nil for the index's own, else a .dwo's.
	names *dieNames
}

// readUnit reads the line rows, functions and inlined calls of the
// compilation unit at off. The names that other entries give are left
// to [inlineIndex.name], with the functions unsorted until then: later
// says which. On malformed input it keeps what it read.
func (x *inlineIndex) readUnit(d *dwarf.Data, off dwarf.Offset) (u *unitIndex, later []pendingName, err error) {
	u = &unitIndex{}
	defer recoverTo(&err, "read DWARF unit")
	r := d.Reader()
	r.Seek(off)
	cu, err := r.Next()
	if err != nil || cu == nil {
		return u, nil, err
	}
	var files []*dwarf.LineFile
	if lr, err := safeLineReader(d, cu); err == nil && lr != nil {
		u.rows, u.files = unitLines(lr)
		files = lr.Files()
	}
	names, ownNames := x.names, (*dieNames)(nil)
	if cu.Tag == dwarf.TagSkeletonUnit {
		// Its functions are in its .dwo; its lines are its own.
		var su *splitUnit
		if x.split != nil {
			su = x.split.unit(cu)
		}
		if su == nil {
			return u, nil, nil
		}
		d, names, ownNames = su.d, su.names, su.names
		if su.files != nil {
			// gcc's .dwo has a file table of its own; clang's call
			// files are the skeleton's.
			files = su.files
		}
		r = d.Reader()
		r.Seek(su.cu)
		if cu, err = r.Next(); err != nil || cu == nil {
			return u, nil, err
		}
	}
	if !cu.Children {
		return u, nil, nil
	}
	// The DIE path from the unit down: for each level, the function
	// being read (index into subs, or -1) and how many inlined calls
	// enclose it.
	type level struct{ sub, inl int }
	stack := []level{{-1, 0}}
	for len(stack) > 0 {
		e, err := r.Next()
		if err != nil || e == nil {
			return u, later, err
		}
		top := stack[len(stack)-1]
		if e.Tag == 0 { // end of a sibling list
			stack = stack[:len(stack)-1]
			continue
		}
		cur := top
		switch e.Tag {
		case dwarf.TagSubprogram:
			cur = level{-1, 0}
			rs, _ := d.Ranges(e)
			if len(rs) > 0 {
				inl := new([]inlineScope)
				name, ref, isRef := names.ownName(e, false)
				cur.sub = len(u.subs)
				for _, rg := range rs {
					if rg[0] < rg[1] {
						u.subs = append(u.subs, subprogram{lo: rg[0], hi: rg[1], name: name, inline: inl})
					}
				}
				if cur.sub == len(u.subs) {
					cur.sub = -1
				} else if isRef {
					later = append(later, pendingName{ref: ref, unit: u, lo: cur.sub, hi: len(u.subs), names: ownNames})
				}
			}
		case dwarf.TagInlinedSubroutine:
			if top.sub < 0 || x.scopes >= maxInlineScopes {
				break
			}
			cur.inl = top.inl + 1
			rs, _ := d.Ranges(e)
			name, ref, isRef := names.ownName(e, false)
			callFile := ""
			if k, ok := e.Val(dwarf.AttrCallFile).(int64); ok && k >= 0 && int(k) < len(files) && files[k] != nil {
				callFile = files[k].Name
			}
			callLine, _ := e.Val(dwarf.AttrCallLine).(int64)
			inl := u.subs[top.sub].inline
			first := len(*inl)
			for _, rg := range rs {
				if rg[0] < rg[1] {
					*inl = append(*inl, inlineScope{lo: rg[0], hi: rg[1], depth: cur.inl, name: name, callFile: callFile, callLine: int(callLine)})
					x.scopes++
				}
			}
			if isRef && len(*inl) > first {
				later = append(later, pendingName{ref: ref, unit: u, inline: inl, lo: first, hi: len(*inl), names: ownNames})
			}
		}
		if e.Children {
			if len(stack) >= maxDIEDepth {
				r.SkipChildren()
				continue
			}
			stack = append(stack, cur)
		}
	}
	return u, later, nil
}
