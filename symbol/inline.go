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
// reads .debug_info and .debug_line of the file the symbols came from on
// first use and returns nil where they say nothing about vaddr.
func (s *Symbols) Frames(vaddr uint64) []Frame {
	if s == nil || s.lines == nil {
		return nil
	}
	return s.lines.frames(vaddr)
}

func (t *lineTable) frames(pc uint64) []Frame {
	t.once.Do(t.load)
	file, line, hasLine := t.find(pc)
	i := sort.Search(len(t.subs), func(i int) bool { return t.subs[i].lo > pc }) - 1
	if i < 0 || pc >= t.subs[i].hi {
		if !hasLine {
			return nil
		}
		return []Frame{{File: file, Line: line}}
	}
	sp := &t.subs[i]
	var in []*inlineScope
	for j := range *sp.inline {
		sc := &(*sp.inline)[j]
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

// readInline reads the functions and inlined calls of .debug_info.
func readInline(d *dwarf.Data) (subs []subprogram, err error) {
	defer recoverTo(&err, "read DWARF inline scopes")
	names := &dieNames{d: d, r: d.Reader(), cache: make(map[dwarf.Offset]string)}
	r := d.Reader()
	nScopes := 0
	for {
		cu, err := r.Next()
		if err != nil || cu == nil {
			break
		}
		if cu.Tag != dwarf.TagCompileUnit && cu.Tag != dwarf.TagPartialUnit {
			r.SkipChildren()
			continue
		}
		var files []*dwarf.LineFile
		if lr, err := d.LineReader(cu); err == nil && lr != nil {
			files = lr.Files()
		}
		if !cu.Children {
			continue
		}
		// The DIE path from the unit down: for each level, the
		// function being read (index into subs, or -1) and how many
		// inlined calls enclose it.
		type level struct{ sub, inl int }
		stack := []level{{-1, 0}}
		for len(stack) > 0 {
			e, err := r.Next()
			if err != nil || e == nil {
				return subs, err
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
					name := names.of(e)
					cur.sub = len(subs)
					for _, rg := range rs {
						if rg[0] < rg[1] {
							subs = append(subs, subprogram{lo: rg[0], hi: rg[1], name: name, inline: inl})
						}
					}
					if cur.sub == len(subs) {
						cur.sub = -1
					}
				}
			case dwarf.TagInlinedSubroutine:
				if top.sub < 0 || nScopes >= maxInlineScopes {
					break
				}
				cur.inl = top.inl + 1
				rs, _ := d.Ranges(e)
				name := names.of(e)
				callFile := ""
				if k, ok := e.Val(dwarf.AttrCallFile).(int64); ok && k >= 0 && int(k) < len(files) && files[k] != nil {
					callFile = files[k].Name
				}
				callLine, _ := e.Val(dwarf.AttrCallLine).(int64)
				inl := subs[top.sub].inline
				for _, rg := range rs {
					if rg[0] < rg[1] {
						*inl = append(*inl, inlineScope{lo: rg[0], hi: rg[1], depth: cur.inl, name: name, callFile: callFile, callLine: int(callLine)})
						nScopes++
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
	}
	slices.SortStableFunc(subs, func(a, b subprogram) int { return cmp.Compare(a.lo, b.lo) })
	return subs, nil
}

// dieNames names the functions of DIEs, following abstract origins and
// specifications, with a cache by offset.
type dieNames struct {
	d     *dwarf.Data
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
