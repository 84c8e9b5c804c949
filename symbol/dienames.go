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

// dieNames names the functions of DIEs, following abstract origins and
// specifications into whichever unit they lead (DW_FORM_ref_addr, as
// link-time optimization writes them), with a cache by offset.
type dieNames struct {
	// entry returns DWARF data holding the entry at an offset; nil if
	// there is none.
	entry func(dwarf.Offset) *dwarf.Data
	// prepare is told the offsets of entries about to be read, so that
	// their units are read in one pass.
	prepare func([]dwarf.Offset)
	// cache holds the name of each entry resolved: "" when the chain
	// from it ends without one.
	cache map[dwarf.Offset]string
}

// ownName returns the name e carries itself (its linkage name demangled,
// else its plain name) or, when it has none, the offset of the entry it
// refers to for it: its abstract origin, else its specification.
func ownName(e *dwarf.Entry) (name string, ref dwarf.Offset, ok bool) {
	for _, a := range []dwarf.Attr{dwarf.AttrLinkageName, attrMIPSLinkageName} {
		if s, ok := e.Val(a).(string); ok && s != "" {
			return Demangle(s), 0, false
		}
	}
	if s, ok := e.Val(dwarf.AttrName).(string); ok && s != "" {
		return s, 0, false
	}
	if off, ok := e.Val(dwarf.AttrAbstractOrigin).(dwarf.Offset); ok {
		return "", off, true
	}
	if off, ok := e.Val(dwarf.AttrSpecification).(dwarf.Offset); ok {
		return "", off, true
	}
	return "", 0, false
}

// resolve names the entries at offs, following each one's chain of
// references. The entries of a step are read together, their units in
// one pass: with LTO the abstract origins of one unit's inlined calls
// lie in as many units as the program has source files. Chains that end
// without a name, leave .debug_info, loop or pass maxNameHops are named
// "".
func (n *dieNames) resolve(offs []dwarf.Offset) {
	type chain struct {
		start, cur dwarf.Offset
	}
	var todo []chain
	queued := make(map[dwarf.Offset]bool)
	for _, off := range offs {
		if _, ok := n.cache[off]; !ok && !queued[off] {
			queued[off] = true
			todo = append(todo, chain{off, off})
		}
	}
	for hop := 0; len(todo) > 0 && hop < maxNameHops; hop++ {
		var want []dwarf.Offset
		for _, c := range todo {
			if _, ok := n.cache[c.cur]; !ok {
				want = append(want, c.cur)
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
			s, ref, ok := ownName(e)
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

// read returns the entry at off, or nil.
func (n *dieNames) read(off dwarf.Offset) (e *dwarf.Entry) {
	defer func() {
		if recover() != nil {
			e = nil
		}
	}()
	d := n.entry(off)
	if d == nil {
		return nil
	}
	r := d.Reader()
	r.Seek(off)
	e, err := r.Next()
	if err != nil || e == nil || e.Offset != off {
		return nil
	}
	return e
}
