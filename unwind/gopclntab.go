package unwind

import (
	"cmp"
	"debug/elf"
	"encoding/binary"
	"slices"

	"nsprof/internal/gopclntab"
)

// goRows turns the pcsp tables of a Go pclntab into rows: Go code has no
// .eh_frame, and stripped Go binaries no .debug_frame either, but the
// runtime's own unwinder needs each function's stack-pointer delta at
// every pc. The CFA is rsp + delta + 8 with the return address below it;
// once the frame is set up (delta >= 8: "PUSHQ BP" comes first on amd64)
// the caller's rbp is at CFA-16. Functions not understood are left out.
// textAddr is the address of .text, used when the header's textStart is
// zero (as Go 1.22 and later write it). The table is found and parsed by
// internal/gopclntab, as symbol's names and lines are.
func goRows(data []byte, textAddr uint64) []row {
	le := binary.LittleEndian
	h, err := gopclntab.ParseHeader(data, le)
	if err != nil || h == nil || h.PtrSize != 8 {
		return nil
	}
	text := h.TextStart
	if text == 0 {
		text = textAddr
	}
	ftab := h.FuncTab
	nfunc := uint64(h.NFunc)
	// About five rows per function, with its terminator.
	rows := make([]row, 0, 6*nfunc)
	for i := range nfunc {
		entry := uint64(le.Uint32(ftab[8*i:]))
		funcOff := uint64(le.Uint32(ftab[8*i+4:]))
		var end uint64
		if 8*i+8 < uint64(len(ftab)) {
			end = uint64(le.Uint32(ftab[8*i+8:]))
		}
		if end <= entry || funcOff+20 > uint64(len(ftab)) {
			continue
		}
		pcsp := uint64(le.Uint32(ftab[funcOff+16:]))
		if pcsp == 0 || pcsp >= uint64(len(h.PCTab)) {
			continue
		}
		n, bad := len(rows), false
		ok := gopclntab.Decode(h.PCTab[pcsp:], text+entry, text+end, h.Quantum, func(pc, _ uint64, sp int32) bool {
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
		if !ok || bad {
			rows = rows[:n]
			continue
		}
		rows = append(rows, row{addr: text + end})
	}
	return slices.Clip(rows)
}

// addGoRows merges the rows of f's Go line table into t for the functions
// its CFI does not cover.
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
	rows := goRows(data, text)
	if len(rows) == 0 {
		return
	}
	if len(t.rows) == 0 {
		t.rows = rows
		return
	}
	merged := t.rows
	for i := 0; i < len(rows); {
		j := i + 1
		for j < len(rows) && rows[j-1].cfa != cfaNone {
			j++
		}
		// rows[i:j] is one function, ending with its terminator.
		if t.find(rows[i].addr) == nil {
			merged = append(merged, rows[i:j]...)
		}
		i = j
	}
	// At one address a real row follows a terminator, so lookups, which
	// take the last row at or below an address, find it.
	slices.SortStableFunc(merged, func(a, b row) int {
		if c := cmp.Compare(a.addr, b.addr); c != 0 {
			return c
		}
		return cmp.Compare(min(a.cfa, 1), min(b.cfa, 1))
	})
	t.rows = slices.Clip(merged)
}
