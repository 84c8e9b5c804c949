package unwind

import (
	"debug/elf"
	"encoding/binary"
	"sync"
	"sync/atomic"

	"nsprof/internal/gopclntab"
)

// goFuncs gives the rows of the functions of a Go pclntab from their pcsp
// tables: Go code has no .eh_frame, and stripped Go binaries no
// .debug_frame either, but the runtime's own unwinder needs each
// function's stack-pointer delta at every pc. The CFA is rsp + delta + 8
// with the return address below it; once the frame is set up (delta >= 8:
// "PUSHQ BP" comes first on amd64) the caller's rbp is at CFA-16.
// Functions not understood are left out. The table is found and parsed by
// internal/gopclntab, as symbol's names and lines are.
//
// A function's pcsp table is decoded the first time an address in it is
// looked up: a binary's table decoded whole (the Go compiler's: 40 k
// functions, some 30 MB of rows) cost tens of milliseconds and its memory
// in every recording that sampled the binary at all, for the few hundred
// functions samples hit. Safe for concurrent use.
type goFuncs struct {
	h     *gopclntab.Header
	text  uint64
	nfunc int
	// covered says whether the object's CFI rows cover an address: a
	// function whose entry they cover is theirs (cgo and assembly with
	// .eh_frame), not the pclntab's.
	covered func(uint64) bool

	mu    sync.Mutex
	funcs map[int][]row // decoded, by index; nil for one left out
	// recent holds functions looked up lately, by address: samples come
	// back to the same few, and the search of the function table (320 kB
	// for the Go compiler) missed the processor's caches each time.
	recent [256]atomic.Pointer[goRecent]
}

// goRecent is a function looked up lately: its rows for addresses from
// start to end.
type goRecent struct {
	start, end uint64
	rows       []row
}

// newGoFuncs parses the pclntab in data; nil if it is not one of 64-bit
// pointers.
func newGoFuncs(data []byte, textAddr uint64) *goFuncs {
	h, err := gopclntab.ParseHeader(data, binary.LittleEndian)
	if err != nil || h == nil || h.PtrSize != 8 || h.NFunc <= 0 || uint64(len(h.FuncTab)) < 8*uint64(h.NFunc)+4 {
		return nil
	}
	text := h.TextStart
	if text == 0 {
		text = textAddr
	}
	return &goFuncs{h: h, text: text, nfunc: h.NFunc, covered: func(uint64) bool { return false }, funcs: make(map[int][]row)}
}

// entry returns the start of function i, as an offset from text.
func (g *goFuncs) entry(i int) uint64 {
	return uint64(binary.LittleEndian.Uint32(g.h.FuncTab[8*i:]))
}

// decode returns the rows of function i, ended by a terminator; nil when
// its pcsp table is missing or not understood.
func (g *goFuncs) decode(i int) []row {
	le := binary.LittleEndian
	ftab := g.h.FuncTab
	entry, end := g.entry(i), g.end(i)
	funcOff := uint64(le.Uint32(ftab[8*i+4:]))
	if end <= entry || funcOff+20 > uint64(len(ftab)) {
		return nil
	}
	pcsp := uint64(le.Uint32(ftab[funcOff+16:]))
	if pcsp == 0 || pcsp >= uint64(len(g.h.PCTab)) {
		return nil
	}
	var rows []row
	bad := false
	ok := gopclntab.Decode(g.h.PCTab[pcsp:], g.text+entry, g.text+end, g.h.Quantum, func(pc, _ uint64, sp int32) bool {
		if sp < 0 || sp > 1<<24 {
			bad = true
			return false
		}
		r := row{addr: pc, cfa: cfaSP, cfaOff: sp + 8, ra: ruleCFA, raOff: -8}
		if sp >= 8 {
			r.bp, r.bpOff = ruleCFA, -16
		}
		rows = append(rows, r)
		return true
	})
	if !ok || bad || len(rows) == 0 {
		return nil
	}
	return append(rows, row{addr: g.text + end})
}

// find returns the row of the Go function holding link-time address a,
// or nil.
func (g *goFuncs) find(a uint64) *row {
	if a < g.text {
		return nil
	}
	slot := &g.recent[(a>>6)%uint64(len(g.recent))]
	if r := slot.Load(); r != nil && a >= r.start && a < r.end {
		return findLive(r.rows, a)
	}
	off := a - g.text
	// The last function whose entry is at off or below.
	lo, hi := 0, g.nfunc
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if g.entry(m) <= off {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo == 0 {
		return nil
	}
	i := lo - 1
	start, end := g.text+g.entry(i), g.text+g.end(i)
	g.mu.Lock()
	rows, ok := g.funcs[i]
	if !ok {
		if !g.covered(start) {
			rows = g.decode(i)
		}
		g.funcs[i] = rows
	}
	g.mu.Unlock()
	if a < end {
		slot.Store(&goRecent{start: start, end: end, rows: rows})
	}
	return findLive(rows, a)
}

// end returns the end of function i, as an offset from text; 0 for the
// last, whose end the table does not give.
func (g *goFuncs) end(i int) uint64 {
	if 8*i+12 > len(g.h.FuncTab) {
		return 0
	}
	return uint64(binary.LittleEndian.Uint32(g.h.FuncTab[8*i+8:]))
}

// findLive returns the row of rows covering a, nil for none or a
// terminator.
func findLive(rows []row, a uint64) *row {
	r := findRow(rows, a)
	if r == nil || r.cfa == cfaNone {
		return nil
	}
	return r
}

// addGoRows gives t the rows of f's Go line table for the functions its
// CFI does not cover, decoded as they are looked up.
func (t *Table) addGoRows(f *elf.File, limit uint64) {
	s, search := gopclntab.Section(f)
	if s == nil {
		return
	}
	data, err := sectionBytes(s, limit)
	if err != nil {
		return
	}
	if search {
		i := gopclntab.FindHeader(data, f.ByteOrder)
		if i < 0 {
			return
		}
		data = data[i:]
	}
	text, _ := bases(f)
	g := newGoFuncs(data, text)
	if g == nil {
		return
	}
	rows := t.rows
	g.covered = func(a uint64) bool { return findRow(rows, a) != nil }
	t.gofuncs, t.goBytes = g, len(data)
}
