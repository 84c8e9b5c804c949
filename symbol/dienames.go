package symbol

import "debug/dwarf"

// maxNameHops bounds the chain of abstract origins and specifications
// followed for one name. An LTO build's chain is short (an inlined call,
// the abstract instance of its function in the link-time unit, the
// function's declaration in the unit of its source file); a cyclic or
// endless chain in a malformed file stops here, unnamed.
const maxNameHops = 16

// attrMIPSLinkageName is DW_AT_MIPS_linkage_name, the linkage name of
// DWARF before version 4, which GCC still writes with -gstrict-dwarf off.
const attrMIPSLinkageName dwarf.Attr = 0x2007

// dieRef is a DIE: its offset in .debug_info of the file read, or, with
// alt, of its supplementary file ([altLink]).
type dieRef struct {
	off dwarf.Offset
	alt bool
}

// dieNames names the functions of DIEs, following abstract origins and
// specifications into whichever unit they lead (DW_FORM_ref_addr, as
// link-time optimization writes them) and into the supplementary file
// (dwz's), with a cache by DIE.
type dieNames struct {
	// entry returns DWARF data holding the entry at an offset; nil if
	// there is none.
	entry func(dwarf.Offset) *dwarf.Data
	// prepare is told the offsets of entries about to be read, so that
	// their units are read in one pass.
	prepare func([]dwarf.Offset)
	// alt returns the supplementary file's DWARF, nil when there is
	// none; nil itself when none is searched.
	alt func() *altDWARF
	// cache holds the name of each entry resolved: "" when the chain
	// from it ends without one.
	cache map[dieRef]string
}

// ownName returns the name e, an entry of the file read (or of its
// supplementary file, with inAlt), carries itself (its linkage name
// demangled, else its plain name) or, when it has none, the entry it
// refers to for it: its abstract origin, else its specification.
func (n *dieNames) ownName(e *dwarf.Entry, inAlt bool) (name string, ref dieRef, ok bool) {
	for _, a := range []dwarf.Attr{dwarf.AttrLinkageName, attrMIPSLinkageName} {
		if s := n.stringAttr(e, a, inAlt); s != "" {
			return Demangle(s), dieRef{}, false
		}
	}
	if s := n.stringAttr(e, dwarf.AttrName, inAlt); s != "" {
		return s, dieRef{}, false
	}
	for _, a := range []dwarf.Attr{dwarf.AttrAbstractOrigin, dwarf.AttrSpecification} {
		if r, ok := refAttr(e, a, inAlt); ok {
			return "", r, true
		}
	}
	return "", dieRef{}, false
}

// stringAttr returns the string of attribute a of e, following an
// offset into the supplementary file's .debug_str (DW_FORM_GNU_strp_alt,
// DW_FORM_strp_sup) when e is not of that file itself.
func (n *dieNames) stringAttr(e *dwarf.Entry, a dwarf.Attr, inAlt bool) string {
	f := e.AttrField(a)
	if f == nil {
		return ""
	}
	var off uint64
	switch v := f.Val.(type) {
	case string:
		return v
	case int64: // DW_FORM_GNU_strp_alt
		if f.Class != dwarf.ClassStringAlt || v < 0 {
			return ""
		}
		off = uint64(v)
	case uint32: // DW_FORM_strp_sup
		off = uint64(v)
	case uint64:
		off = v
	default:
		return ""
	}
	if inAlt || n.alt == nil {
		return ""
	}
	if alt := n.alt(); alt != nil {
		return alt.string(off)
	}
	return ""
}

// refAttr returns the DIE attribute a of e refers to: in e's own file,
// or in the supplementary file (DW_FORM_GNU_ref_alt, DW_FORM_ref_sup4
// and 8) when e is not of that file itself.
func refAttr(e *dwarf.Entry, a dwarf.Attr, inAlt bool) (dieRef, bool) {
	f := e.AttrField(a)
	if f == nil {
		return dieRef{}, false
	}
	switch v := f.Val.(type) {
	case dwarf.Offset:
		return dieRef{off: v, alt: inAlt}, true
	case int64: // DW_FORM_GNU_ref_alt
		if f.Class == dwarf.ClassReferenceAlt && !inAlt && v >= 0 && v <= int64(^dwarf.Offset(0)) {
			return dieRef{off: dwarf.Offset(v), alt: true}, true
		}
	case uint32: // DW_FORM_ref_sup4
		if !inAlt {
			return dieRef{off: dwarf.Offset(v), alt: true}, true
		}
	case uint64: // DW_FORM_ref_sup8
		if !inAlt && v <= uint64(^dwarf.Offset(0)) {
			return dieRef{off: dwarf.Offset(v), alt: true}, true
		}
	}
	return dieRef{}, false
}

// resolve names the entries refs, following each one's chain of
// references. The entries of a step are read together, their units in
// one pass: with LTO the abstract origins of one unit's inlined calls
// lie in as many units as the program has source files. Chains that end
// without a name, leave .debug_info, loop or pass maxNameHops are named
// "".
func (n *dieNames) resolve(refs []dieRef) {
	type chain struct {
		start, cur dieRef
	}
	var todo []chain
	queued := make(map[dieRef]bool)
	for _, r := range refs {
		if _, ok := n.cache[r]; !ok && !queued[r] {
			queued[r] = true
			todo = append(todo, chain{r, r})
		}
	}
	for hop := 0; len(todo) > 0 && hop < maxNameHops; hop++ {
		var want []dwarf.Offset
		for _, c := range todo {
			if _, ok := n.cache[c.cur]; !ok && !c.cur.alt {
				want = append(want, c.cur.off)
			}
		}
		if len(want) > 0 {
			n.prepare(want)
		}
		next := todo[:0]
		for _, c := range todo {
			if s, ok := n.cache[c.cur]; ok {
				n.cache[c.start] = s
				continue
			}
			e := n.read(c.cur)
			if e == nil {
				n.cache[c.start] = ""
				continue
			}
			s, ref, ok := n.ownName(e, c.cur.alt)
			switch {
			case s != "":
				n.cache[c.cur] = s
				n.cache[c.start] = s
			case !ok:
				n.cache[c.start] = ""
			default:
				next = append(next, chain{c.start, ref})
			}
		}
		todo = next
	}
	for _, c := range todo {
		n.cache[c.start] = "" // too long a chain, or a cycle
	}
}

// read returns the entry ref, or nil.
func (n *dieNames) read(ref dieRef) (e *dwarf.Entry) {
	defer func() {
		if recover() != nil {
			e = nil
		}
	}()
	var d *dwarf.Data
	if !ref.alt {
		d = n.entry(ref.off)
	} else if n.alt != nil {
		if alt := n.alt(); alt != nil {
			d = alt.d
		}
	}
	if d == nil {
		return nil
	}
	r := d.Reader()
	r.Seek(ref.off)
	e, err := r.Next()
	if err != nil || e == nil || e.Offset != ref.off {
		return nil
	}
	return e
}
