package record

import (
	"slices"
	"strings"

	"nsprof/capture"
	"nsprof/symbol"
)

// objNames are the names of the sampled file offsets of one object, taken
// from its symbol table as soon as it is resolved so that the table can be
// let go before the next objects are read: the bundle names processes
// after every object is resolved, and holding every object's table until
// then made the peak of a recording over many large binaries (a loop of
// Go compiles: the toolchain's tables, 47 k–85 k symbols).
type objNames struct {
	// offs are the sampled file offsets, sorted; vas their link-time
	// addresses and fn the index of the function holding each in fns,
	// -1 for none.
	offs []uint64
	vas  []uint64
	fn   []int32
	fns  []namedFunc
}

// namedFunc is a function of the symbol table, its name demangled.
type namedFunc struct {
	addr, size uint64
	name       string
}

// nameOffsets names the file offsets offs (sorted, without repeats) of o
// from its symbol table, keeping offs; nil when o has none.
func (o *symObj) nameOffsets(offs []uint64) *objNames {
	if o.syms == nil || o.elf == nil {
		return nil
	}
	n := &objNames{offs: offs, vas: make([]uint64, len(offs)), fn: make([]int32, len(offs))}
	index := make(map[uint64]int32) // function address -> index in fns
	for i, off := range offs {
		n.fn[i] = -1
		va, ok := o.elf.Vaddr(off)
		if !ok {
			continue
		}
		n.vas[i] = va
		sym, ok := o.syms.Lookup(va)
		if !ok {
			continue
		}
		k, ok := index[sym.Addr]
		if !ok {
			k = int32(len(n.fns))
			index[sym.Addr] = k
			n.fns = append(n.fns, namedFunc{addr: sym.Addr, size: sym.Size, name: symbol.Demangle(sym.Name)})
		}
		n.fn[i] = k
	}
	// The names, copied into one string: those of an ELF symbol table
	// share the table's string, which one kept would keep whole.
	var b strings.Builder
	for _, f := range n.fns {
		b.WriteString(f.name)
	}
	all, at := b.String(), 0
	for i := range n.fns {
		k := len(n.fns[i].name)
		n.fns[i].name = all[at : at+k]
		at += k
	}
	return n
}

// releaseTables lets go of o's symbol table and file headers once its
// sampled offsets are named (nameOffsets): a later resolve reads them
// again. A split recording (carry) keeps the table of an object without
// source lines for the next capture, as before names were taken early:
// one with lines is read again at its next resolve anyway (dropLines).
func (o *symObj) releaseTables(carry bool) {
	if o.syms == nil || (carry && !o.linesDropped) {
		return
	}
	o.elf.Close()
	o.loaded, o.linesDropped, o.elf, o.syms = false, false, nil, nil
}

// objCursor walks the sampled offsets of one object (objNames) for the
// bundle, which names every process's addresses: sorted, so that those
// of one mapping come with increasing offsets, and the next one is found
// a step or a few after the one before, where a binary search over the
// object's offsets and two maps (frames, and whether its lines were
// written) missed the caches for each address of each process (over a
// compile loop, the compiler's tens of thousands of offsets, for hundreds
// of processes).
type objCursor struct {
	n *objNames
	// frames and described are by index in n.offs: the source frames
	// of the offset's link-time address (nil for an object without
	// any), and whether its lines were written by file offset.
	frames    [][]capture.SourceFrame
	described []bool
	i         int // the index found last
	// id is the build-id the object's lines are described by, from the
	// mappings of it reached (see describedLines).
	id string
}

// newObjCursor makes the cursor of an object named n (nil: none named),
// its frames fr by link-time address.
func newObjCursor(n *objNames, fr map[uint64][]capture.SourceFrame) *objCursor {
	if n == nil {
		n = &objNames{}
	}
	c := &objCursor{n: n, described: make([]bool, len(n.offs))}
	if len(fr) > 0 {
		c.frames = make([][]capture.SourceFrame, len(n.offs))
		for i, va := range n.vas {
			if n.fn[i] >= 0 {
				c.frames[i] = fr[va]
			}
		}
	}
	return c
}

// framesAt returns the source frames of the offset at index i.
func (c *objCursor) framesAt(i int) []capture.SourceFrame {
	if c.frames == nil {
		return nil
	}
	return c.frames[i]
}

// nameOnly gives the offset of index i, which has no source frames, one
// naming its function alone, and returns it.
func (c *objCursor) nameOnly(i int, name string) []capture.SourceFrame {
	if c.frames == nil {
		c.frames = make([][]capture.SourceFrame, len(c.n.offs))
	}
	c.frames[i] = []capture.SourceFrame{{Function: name}}
	return c.frames[i]
}

// find returns the index of offset off in the object's sampled offsets,
// false when it is not one of them; it looks forward from the offset
// found last, doubling its step, and searches from the start when off
// is before it.
func (c *objCursor) find(off uint64) (int, bool) {
	offs := c.n.offs
	lo, hi := 0, len(offs)
	switch i := c.i; {
	case i < len(offs) && offs[i] < off:
		// Gallop from offs[i] < off to the first offset at least off.
		step := 1
		lo, hi = i, i+1
		for hi < len(offs) && offs[hi] < off {
			lo, step = hi, step*2
			hi = lo + step
		}
		lo, hi = lo+1, min(hi+1, len(offs))
	case i < len(offs) && offs[i] == off:
		return i, true
	}
	j, found := slices.BinarySearch(offs[lo:hi], off)
	c.i = lo + j
	return c.i, found
}
