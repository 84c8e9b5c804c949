package unwind

import (
	"cmp"
	"debug/elf"
	"encoding/binary"
	"slices"
)

// Go's pclntab magic numbers of the layouts read here (Go 1.18 and 1.20+).
const (
	goMagic118 = 0xfffffff0
	goMagic120 = 0xfffffff1
)

// goRows turns the pcsp tables of a Go pclntab into rows: Go code has no
// .eh_frame, and stripped Go binaries no .debug_frame either, but the
// runtime's own unwinder needs each function's stack-pointer delta at
// every pc. The CFA is rsp + delta + 8 with the return address below it;
// once the frame is set up (delta >= 8: "PUSHQ BP" comes first on amd64)
// the caller's rbp is at CFA-16. Functions not understood are left out.
// textAddr is the address of .text, used when the header's textStart is
// zero (as Go 1.22 and later write it).
func goRows(data []byte, textAddr uint64) []row {
	le := binary.LittleEndian
	if len(data) < 72 {
		return nil
	}
	if m := le.Uint32(data); (m != goMagic118 && m != goMagic120) || data[7] != 8 {
		return nil
	}
	quantum := uint64(data[6])
	nfunc := le.Uint64(data[8:])
	text := le.Uint64(data[24:])
	if text == 0 {
		text = textAddr
	}
	pctab := le.Uint64(data[56:])
	pcln := le.Uint64(data[64:])
	if quantum == 0 || pcln > uint64(len(data)) || pctab > uint64(len(data)) || nfunc > (uint64(len(data))-pcln)/8 {
		return nil
	}
	ftab := data[pcln:]
	// About five rows per function, with its terminator.
	rows := make([]row, 0, 6*nfunc)
	for i := range nfunc {
		entry := uint64(le.Uint32(ftab[8*i:]))
		funcOff := pcln + uint64(le.Uint32(ftab[8*i+4:]))
		var end uint64
		if 8*i+8 < uint64(len(ftab)) {
			end = uint64(le.Uint32(ftab[8*i+8:]))
		}
		if end <= entry || funcOff+20 > uint64(len(data)) {
			continue
		}
		pcsp := uint64(le.Uint32(data[funcOff+16:]))
		if pcsp == 0 || pctab+pcsp >= uint64(len(data)) {
			continue
		}
		n := len(rows)
		ok := goPCValues(data[pctab+pcsp:], text+entry, text+end, quantum, func(pc uint64, sp int32) {
			r := row{addr: pc, cfa: cfaSP, cfaOff: sp + 8, ra: ruleCFA, raOff: -8}
			if sp >= 8 {
				r.bp, r.bpOff = ruleCFA, -16
			}
			rows = append(rows, r)
		})
		if !ok {
			rows = rows[:n]
			continue
		}
		rows = append(rows, row{addr: text + end})
	}
	return slices.Clip(rows)
}

// goPCValues decodes a pcvalue table from entry to end, calling emit with
// the value from each pc on. It reports false for a malformed table.
func goPCValues(b []byte, entry, end, quantum uint64, emit func(pc uint64, v int32)) bool {
	pc, val := entry, int32(-1)
	for first := true; pc < end; first = false {
		uv, n := binary.Uvarint(b)
		if n <= 0 {
			return false
		}
		if uv == 0 && !first {
			return true // the rest of the function is padding
		}
		b = b[n:]
		if uv&1 != 0 {
			uv = ^(uv >> 1)
		} else {
			uv >>= 1
		}
		val += int32(uv)
		d, n := binary.Uvarint(b)
		if n <= 0 || d == 0 {
			return false
		}
		b = b[n:]
		if val < 0 || val > 1<<24 {
			return false
		}
		emit(pc, val)
		pc += d * quantum
	}
	return true
}

// addGoRows merges the rows of f's .gopclntab into t for the functions
// its CFI does not cover.
func (t *Table) addGoRows(f *elf.File, limit uint64) {
	s := f.Section(".gopclntab")
	if s == nil {
		return
	}
	data, err := sectionBytes(s, limit)
	if err != nil {
		return
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
