package unwind

import (
	"cmp"
	"fmt"
	"slices"
	"sync/atomic"
	"unsafe"
)

// row says how to find the caller's frame from any address from addr up
// to the next row's. Offsets of the saved rbp and return address fit 16
// bits (rules whose offsets do not are ruleExpr), which keeps a row at 24
// bytes.
type row struct {
	addr   uint64
	cfaOff int32
	bpOff  int16
	raOff  int16
	cfa    cfaKind
	bp, ra ruleKind
	// arg is the CFA register for cfaReg and the threshold for cfaPLT.
	arg uint8
	// signal says the row is a signal trampoline's: its "return address"
	// is the interrupted instruction itself.
	signal bool
}

// segment is one PT_LOAD program header, for turning mapping offsets into
// the link-time addresses rows use.
type segment struct {
	off, vaddr, filesz uint64
}

// Table is the interpreted call frame information of one object: rows
// sorted by link-time address. Its rows are immutable; it is safe for
// concurrent use.
type Table struct {
	rows []row
	// eh holds the FDEs of a non-Go object's .eh_frame, interpreted as
	// looked up; rows then holds those of its .debug_frame sections.
	eh   *lazyFDEs
	segs []segment
	// fdes counts the FDEs the rows came from.
	fdes int
	// gofuncs answers, for a Go binary, where the rows do not: from the
	// function entries and pcsp tables of its pclntab (goBytes of them),
	// a function decoded when first looked up.
	gofuncs *goFuncs
	goBytes int
	// hints holds, by a hash of the address looked up, the index (plus
	// one; 0 for none) of the row last found for an address of that
	// hash. A lookup takes the hinted row when it covers the address,
	// which it checks, so a stale hint, or one another goroutine wrote
	// meanwhile, costs only the binary search. The leaf step of an
	// off-CPU recording looks up the same few addresses at every
	// context switch, and the binary search over libc's rows missed the
	// cache at most of its steps.
	hints [tableHints]atomic.Uint32
}

// tableHints is the number of Table.hints.
const (
	tableHintBits = 8
	tableHints    = 1 << tableHintBits
)

// Len returns the number of rows from CFI made so far (those of
// .eh_frame are made as their addresses are looked up): a Go binary's
// functions the pclntab describes are not counted.
func (t *Table) Len() int {
	n := len(t.rows)
	if t.eh != nil {
		n += int(t.eh.made.Load())
	}
	return n
}

// Size returns the memory the table holds, in bytes: its rows, the
// .eh_frame it interprets as looked up with the rows made of it so far,
// and what a Go binary's table keeps of its pclntab (the functions
// decoded from it are not counted).
func (t *Table) Size() int {
	n := int(unsafe.Sizeof(row{}))*cap(t.rows) + int(unsafe.Sizeof(segment{}))*cap(t.segs) + int(unsafe.Sizeof(*t)) + t.goBytes
	if t.eh != nil {
		n += t.eh.size()
	}
	return n
}

// Bias returns what to subtract from an address in a mapping that starts
// at mapStart with file offset mapOff to get the link-time address the
// table uses. ok is false when no loadable segment holds mapOff.
func (t *Table) Bias(mapStart, mapOff uint64) (bias uint64, ok bool) {
	for _, s := range t.segs {
		if mapOff >= s.off && mapOff-s.off < max(s.filesz, 1) {
			return mapStart - mapOff + s.off - s.vaddr, true
		}
	}
	return 0, false
}

// lookup returns the row covering link-time address a, false for none. The
// binary search is written out: through slices.BinarySearchFunc's
// comparison closure it was most of a leaf step's time (an off-CPU
// recording takes one per context switch).
func (t *Table) lookup(a uint64) (row, bool) {
	if t.eh != nil {
		if r := t.eh.find(a); r != nil {
			return *r, true
		}
	}
	if r := t.findHinted(a); r != nil {
		return *r, true
	}
	if t.gofuncs == nil {
		return row{}, false
	}
	return t.gofuncs.find(a)
}

// findHinted is findRow(t.rows, a), through t.hints.
func (t *Table) findHinted(a uint64) *row {
	rows := t.rows
	h := &t.hints[(a*0x9e3779b97f4a7c15)>>(64-tableHintBits)]
	i := int(h.Load()) - 1
	if i < 0 || i >= len(rows) || rows[i].addr > a || (i+1 < len(rows) && rows[i+1].addr <= a) {
		if i = lastRowAt(rows, a); i < 0 {
			return nil
		}
		h.Store(uint32(i + 1))
	}
	if r := &rows[i]; r.cfa != cfaNone {
		return r
	}
	return nil
}

// findRow returns the row of rows (sorted by address) covering a, or nil;
// a terminator row covers nothing.
func findRow(rows []row, a uint64) *row {
	i := lastRowAt(rows, a)
	if i < 0 || rows[i].cfa == cfaNone {
		return nil
	}
	return &rows[i]
}

// lastRowAt returns the index of the last row of rows (sorted by
// address) that starts at or before a, or -1.
func lastRowAt(rows []row, a uint64) int {
	lo, hi := 0, len(rows) // rows[:lo] start at or before a, rows[hi:] after
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if rows[m].addr <= a {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo - 1
}

// build interprets fdes (of any order, possibly overlapping: the first of
// overlapping FDEs wins, so callers list preferred sources first) into
// t.rows. An FDE whose instructions are malformed is left out, and the
// first such error is returned with the table.
func (t *Table) build(fdes []fde) error {
	fdes = sortFDEs(fdes)
	// Room for the 7 to 9 rows an FDE gives in libc, bash, libstdc++ and
	// perf: grown by append, the rows were copied over and over, most of
	// a table's reading time.
	t.rows = slices.Grow(t.rows, 8*len(fdes)+1)
	var firstErr error
	var end uint64
	var scratch interp
	for i := range fdes {
		f := &fdes[i]
		if f.begin < end {
			continue // overlaps a preferred or earlier FDE
		}
		c := f.cie
		if initCIE(c) != nil {
			if firstErr == nil {
				firstErr = fmt.Errorf("CIE of FDE at %#x: %w", f.off, c.initErr)
			}
			continue
		}
		if len(t.rows) > 0 && f.begin > end {
			t.rows = append(t.rows, row{addr: end}) // a gap without CFI
		}
		n := len(t.rows)
		var err error
		if t.rows, err = scratch.rows(t.rows, f); err != nil {
			t.rows = t.rows[:n]
			if firstErr == nil {
				firstErr = fmt.Errorf("FDE at %#x: %w", f.off, err)
			}
			continue
		}
		t.fdes++
		end = f.end
	}
	if len(t.rows) > 0 {
		t.rows = append(t.rows, row{addr: end})
	}
	if cap(t.rows)-len(t.rows) > len(t.rows)/4 {
		t.rows = slices.Clone(t.rows) // not hold a quarter more than used
	}
	t.rows = slices.Clip(t.rows)
	return firstErr
}

// initCIE interprets c's initial instructions once, and returns the
// error they gave (c.initErr).
func initCIE(c *cie) error {
	if !c.inited {
		c.inited = true
		in := interp{c: c}
		c.init = state{cfa: cfaSP, cfaReg: dwarfRSP}
		c.initErr = in.run(&buf{b: c.initial}, &c.init, 0, ^uint64(0), nil)
	}
	return c.initErr
}

// rows appends to out the rows of f, whose CIE is initialized, with in
// as scratch space; on an error, out is returned with part of them.
func (in *interp) rows(out []row, f *fde) ([]row, error) {
	c := f.cie
	n := len(out)
	st := c.init
	in.c, in.init, in.stack = c, &c.init, in.stack[:0]
	r := buf{b: f.insns, text: 0}
	err := in.run(&r, &st, f.begin, f.end, func(addr uint64, s *state) {
		nr := makeRow(addr, s, c.signal)
		if len(out) > n {
			last := &out[len(out)-1]
			if sameRule(last, &nr) {
				return
			}
			if last.addr == addr {
				*last = nr
				return
			}
		}
		out = append(out, nr)
	})
	return out, err
}

// sortFDEs returns fdes sorted by begin address, those of one address in
// their order in fdes. A stable sort of the FDEs themselves (which hold
// pointers) took a fifth of a table's reading time in write barriers; the
// indexes are sorted instead, and the FDEs copied once.
func sortFDEs(fdes []fde) []fde {
	byBegin := func(a, b fde) int { return cmp.Compare(a.begin, b.begin) }
	if slices.IsSortedFunc(fdes, byBegin) {
		return fdes
	}
	idx := make([]int32, len(fdes))
	for i := range idx {
		idx[i] = int32(i)
	}
	slices.SortFunc(idx, func(a, b int32) int {
		if c := cmp.Compare(fdes[a].begin, fdes[b].begin); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	})
	out := make([]fde, len(fdes))
	for i, j := range idx {
		out[i] = fdes[j]
	}
	return out
}

func sameRule(a, b *row) bool {
	x, y := *a, *b
	x.addr, y.addr = 0, 0
	return x == y
}

func makeRow(addr uint64, s *state, signal bool) row {
	r := row{addr: addr, cfa: s.cfa, signal: signal}
	switch s.cfa {
	case cfaReg:
		if s.cfaReg > 255 {
			r.cfa = cfaExpr
		}
		r.arg = uint8(s.cfaReg)
	case cfaPLT:
		r.arg = s.pltK
	}
	if s.cfaOff < -1<<31 || s.cfaOff >= 1<<31 {
		r.cfa = cfaExpr
	} else if r.cfa != cfaExpr {
		r.cfaOff = int32(s.cfaOff)
	}
	r.bp, r.bpOff = ruleOf(s.bp)
	r.ra, r.raOff = ruleOf(s.ra)
	return r
}

func ruleOf(r rule) (ruleKind, int16) {
	switch r.kind {
	case ruleCFA, ruleSP, ruleValCFA:
		if !fits16(r.off) {
			return ruleExpr, 0
		}
		return r.kind, int16(r.off)
	}
	return r.kind, 0
}
