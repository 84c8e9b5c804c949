package symbol

import (
	"cmp"
	"debug/dwarf"
	"slices"
	"sort"
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
// with the line of the outermost inlined call (or of vaddr itself). It
// reads the DWARF of the file the symbols came from on first use, and of
// each compilation unit only when an address falls in it; nil where the
// DWARF says nothing about vaddr.
func (s *Symbols) Frames(vaddr uint64) []Frame {
	if s == nil || s.lines == nil {
		return nil
	}
	return s.lines.frames(vaddr)
}

func (t *lineTable) frames(pc uint64) []Frame {
	d := t.data()
	if d == nil {
		return nil
	}
	t.inlMu.Lock()
	defer t.inlMu.Unlock()
	if t.inl == nil {
		t.inl = newInlineIndex(d)
	}
	return t.inl.frames(pc)
}

// inlineIndex finds the compilation unit of an address and reads its
// functions, inlined calls and line rows the first time.
type inlineIndex struct {
	d      *dwarf.Data
	r      *dwarf.Reader // for SeekPC: fastest over ascending addresses
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

func newInlineIndex(d *dwarf.Data) *inlineIndex {
	return &inlineIndex{d: d, r: d.Reader(), names: &dieNames{r: d.Reader(), cache: make(map[dwarf.Offset]string)}, read: make(map[dwarf.Offset]*unitIndex)}
}

// unit returns the compilation unit holding pc, read on first use; nil
// when no unit covers pc.
func (x *inlineIndex) unit(pc uint64) (u *unitIndex) {
	defer func() {
		if recover() != nil {
			u = nil
		}
	}()
	cu, err := x.r.SeekPC(pc)
	if err != nil || cu == nil {
		return nil
	}
	if u = x.read[cu.Offset]; u == nil {
		u, _ = x.readUnit(cu.Offset)
		x.read[cu.Offset] = u
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

// readUnit reads the line rows, functions and inlined calls of the
// compilation unit at off. On malformed input it keeps what it read.
func (x *inlineIndex) readUnit(off dwarf.Offset) (u *unitIndex, err error) {
	u = &unitIndex{}
	defer recoverTo(&err, "read DWARF unit")
	d := x.d
	r := d.Reader()
	r.Seek(off)
	cu, err := r.Next()
	if err != nil || cu == nil {
		return u, err
	}
	var files []*dwarf.LineFile
	if lr, err := d.LineReader(cu); err == nil && lr != nil {
		u.rows, u.files = unitLines(lr)
		files = lr.Files()
	}
	if !cu.Children {
		return u, nil
	}
	// The DIE path from the unit down: for each level, the function
	// being read (index into subs, or -1) and how many inlined calls
	// enclose it.
	type level struct{ sub, inl int }
	stack := []level{{-1, 0}}
	defer func() {
		slices.SortStableFunc(u.subs, func(a, b subprogram) int { return cmp.Compare(a.lo, b.lo) })
	}()
	for len(stack) > 0 {
		e, err := r.Next()
		if err != nil || e == nil {
			return u, err
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
				name := x.names.of(e)
				cur.sub = len(u.subs)
				for _, rg := range rs {
					if rg[0] < rg[1] {
						u.subs = append(u.subs, subprogram{lo: rg[0], hi: rg[1], name: name, inline: inl})
					}
				}
				if cur.sub == len(u.subs) {
					cur.sub = -1
				}
			}
		case dwarf.TagInlinedSubroutine:
			if top.sub < 0 || x.scopes >= maxInlineScopes {
				break
			}
			cur.inl = top.inl + 1
			rs, _ := d.Ranges(e)
			name := x.names.of(e)
			callFile := ""
			if k, ok := e.Val(dwarf.AttrCallFile).(int64); ok && k >= 0 && int(k) < len(files) && files[k] != nil {
				callFile = files[k].Name
			}
			callLine, _ := e.Val(dwarf.AttrCallLine).(int64)
			inl := u.subs[top.sub].inline
			for _, rg := range rs {
				if rg[0] < rg[1] {
					*inl = append(*inl, inlineScope{lo: rg[0], hi: rg[1], depth: cur.inl, name: name, callFile: callFile, callLine: int(callLine)})
					x.scopes++
				}
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
	return u, nil
}

// dieNames names the functions of DIEs, following abstract origins and
// specifications, with a cache by offset.
type dieNames struct {
	r     *dwarf.Reader
	cache map[dwarf.Offset]string
}

// of returns the name of the function e is or is an instance of: its
// linkage name demangled, else its plain name.
func (n *dieNames) of(e *dwarf.Entry) string { return n.resolve(e, 0) }

func (n *dieNames) resolve(e *dwarf.Entry, hops int) string {
	if s, ok := e.Val(dwarf.AttrLinkageName).(string); ok && s != "" {
		return Demangle(s)
	}
	if s, ok := e.Val(dwarf.AttrName).(string); ok && s != "" {
		return s
	}
	off, ok := e.Val(dwarf.AttrAbstractOrigin).(dwarf.Offset)
	if !ok {
		off, ok = e.Val(dwarf.AttrSpecification).(dwarf.Offset)
	}
	if !ok || hops >= 8 {
		return ""
	}
	if s, ok := n.cache[off]; ok {
		return s
	}
	n.cache[off] = "" // a cycle ends here
	n.r.Seek(off)
	next, err := n.r.Next()
	if err != nil || next == nil {
		return ""
	}
	s := n.resolve(next, hops+1)
	n.cache[off] = s
	return s
}
