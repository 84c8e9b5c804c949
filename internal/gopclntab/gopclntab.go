// Package gopclntab is the one reader of the parts of Go's line table
// (pclntab) that nsprof shares: where an ELF file keeps it, its header,
// and the pcvalue tables. symbol reads names, source lines and inline
// trees from it, and unwind the stack-pointer deltas (pcsp) that stand in
// for CFI in Go code; both find and parse the table here, so both read
// the same table of the same file. It does no I/O: callers read the
// section's bytes within their own bounds.
//
// Function names of binaries older than Go 1.18 are read by symbol
// through debug/gosym, which knows their layouts; nothing here does.
package gopclntab

import (
	"debug/elf"
	"encoding/binary"
	"fmt"
	"math"
)

// Magic numbers of the pclntab layouts.
const (
	Magic116 = 0xfffffffa
	Magic118 = 0xfffffff0
	Magic120 = 0xfffffff1
)

// Section returns the section of f holding the Go line table, and whether
// the table must be searched for in it with [FindHeader]: .gopclntab, or
// .data.rel.ro.gopclntab (position-independent builds of Go 1.25 and
// before), or, in a Go binary whose linker put it in .data.rel.ro (older
// position-independent builds), that section. It returns nil for a file
// without one.
func Section(f *elf.File) (s *elf.Section, search bool) {
	for _, name := range []string{".gopclntab", ".data.rel.ro.gopclntab"} {
		if s := f.Section(name); s != nil && s.Type != elf.SHT_NOBITS {
			return s, false
		}
	}
	if s := f.Section(".data.rel.ro"); s != nil && s.Type != elf.SHT_NOBITS && IsGo(f) {
		return s, true
	}
	return nil, false
}

// IsGo reports whether f was built by the Go linker: it has a
// .go.buildinfo or .note.go.buildid section.
func IsGo(f *elf.File) bool {
	return f.Section(".go.buildinfo") != nil || f.Section(".note.go.buildid") != nil
}

// FindHeader returns the offset of a pclntab header in data: a magic of
// Go 1.16 or later, two zero bytes, the instruction size quantum (1, 2 or
// 4) and the pointer size (4 or 8), aligned to 8 bytes; -1 if there is
// none.
func FindHeader(data []byte, bo binary.ByteOrder) int {
	for i := 0; i+8 <= len(data); i += 8 {
		switch bo.Uint32(data[i:]) {
		case Magic120, Magic118, Magic116:
		default:
			continue
		}
		if data[i+4] != 0 || data[i+5] != 0 {
			continue
		}
		if q := data[i+6]; q != 1 && q != 2 && q != 4 {
			continue
		}
		if p := data[i+7]; p != 4 && p != 8 {
			continue
		}
		return i
	}
	return -1
}

// Header is the header of a Go 1.18 or later pclntab, with its tables as
// slices of the data it was parsed from: each runs from its start to the
// end of the data.
type Header struct {
	Magic   uint32
	Quantum uint64 // instruction size quantum of pc deltas
	PtrSize int
	NFunc   int
	// TextStart is the header's text address; zero as Go 1.22 and later
	// write it, when the caller takes .text's address instead.
	TextStart uint64
	// FuncNameOff is the offset of FuncNames from the header.
	FuncNameOff uint64
	FuncNames   []byte
	CUTab       []byte // per compilation unit: file indexes into FileTab
	FileTab     []byte
	PCTab       []byte
	// FuncTab is the function table: NFunc+1 pairs of 32-bit (entry
	// offset from text, offset of the _func record from FuncTab), the
	// last an end, followed by the _func records.
	FuncTab []byte
}

// FormatError reports a malformed pclntab header.
type FormatError struct {
	Off int64 // byte offset in the table's data
	Msg string
	Val any
}

// Error implements error.
func (e *FormatError) Error() string {
	return fmt.Sprintf("pclntab %s '%v' at byte %#x", e.Msg, e.Val, e.Off)
}

// Layout is the header of a Go 1.18 or later pclntab with its tables as
// offsets from the header, each checked to lie within the table's size:
// what [ParseHeader] slices, for a caller that reads the tables on
// demand.
type Layout struct {
	Magic     uint32
	Quantum   uint64
	PtrSize   int
	NFunc     int
	TextStart uint64
	// Offsets of the tables from the header.
	FuncNames, CUTab, FileTab, PCTab, FuncTab uint64
}

// HeaderSize returns how many bytes of a pclntab [ParseLayout] reads.
const HeaderSize = 8 + 8*8

// ParseLayout parses the header at the start of head, of a table size
// bytes long (head may be its first [HeaderSize] bytes only), of byte
// order bo. It returns nil, nil when the magic is not that of Go 1.18 or
// later, and a *[FormatError] when the header does not hold together.
func ParseLayout(head []byte, size uint64, bo binary.ByteOrder) (*Layout, error) {
	if len(head) < 8 {
		return nil, nil
	}
	l := &Layout{Magic: bo.Uint32(head), Quantum: uint64(head[6]), PtrSize: int(head[7])}
	if l.Magic != Magic118 && l.Magic != Magic120 {
		return nil, nil
	}
	if l.PtrSize != 4 && l.PtrSize != 8 || l.Quantum == 0 {
		return nil, &FormatError{Off: 6, Msg: "header: bad quantum or pointer size", Val: head[6:8]}
	}
	if len(head) < 8+8*l.PtrSize || size < uint64(8+8*l.PtrSize) {
		return nil, &FormatError{Off: 0, Msg: "header truncated", Val: min(uint64(len(head)), size)}
	}
	field := func(i int) uint64 {
		if l.PtrSize == 4 {
			return uint64(bo.Uint32(head[8+i*4:]))
		}
		return bo.Uint64(head[8+i*8:])
	}
	var bad error
	from := func(i int) uint64 {
		o := field(i)
		if o > size && bad == nil {
			bad = &FormatError{Off: int64(8 + i*l.PtrSize), Msg: "header: table offset past its end", Val: o}
		}
		return o
	}
	nfunc := field(0)
	l.TextStart = field(2)
	l.FuncNames, l.CUTab, l.FileTab, l.PCTab, l.FuncTab = from(3), from(4), from(5), from(6), from(7)
	if bad != nil {
		return nil, bad
	}
	if nfunc > (size-l.FuncTab)/8 {
		return nil, &FormatError{Off: 8, Msg: "header: more functions than the table holds", Val: nfunc}
	}
	l.NFunc = int(nfunc)
	return l, nil
}

// ParseHeader parses the header at the start of data, of byte order bo.
// It returns nil, nil when the magic is not that of Go 1.18 or later, and
// a *[FormatError] when the header does not hold together.
func ParseHeader(data []byte, bo binary.ByteOrder) (*Header, error) {
	l, err := ParseLayout(data, uint64(len(data)), bo)
	if l == nil || err != nil {
		return nil, err
	}
	return &Header{
		Magic: l.Magic, Quantum: l.Quantum, PtrSize: l.PtrSize, NFunc: l.NFunc,
		TextStart: l.TextStart, FuncNameOff: l.FuncNames,
		FuncNames: data[l.FuncNames:], CUTab: data[l.CUTab:], FileTab: data[l.FileTab:],
		PCTab: data[l.PCTab:], FuncTab: data[l.FuncTab:],
	}, nil
}

// Decode walks the pcvalue table tab of the function starting at entry
// up to end, pc deltas scaled by quantum: for each run of pcs [pc, next)
// with one value v it calls emit, and stops when emit returns false. It
// reports false for a malformed table, true when the table ended or emit
// stopped it. A value may be negative (-1 is "no inlined call" in the
// inline tree index).
func Decode(tab []byte, entry, end, quantum uint64, emit func(pc, next uint64, v int32) bool) bool {
	pc, val := entry, int32(-1)
	for first := true; pc < end; first = false {
		uv, n := binary.Uvarint(tab)
		if n <= 0 || uv > math.MaxUint32 {
			return false
		}
		if uv == 0 && !first {
			return true // the rest of the function is padding
		}
		tab = tab[n:]
		d, n := binary.Uvarint(tab)
		if n <= 0 || d > math.MaxUint32 {
			return false
		}
		tab = tab[n:]
		if uv&1 != 0 {
			val += int32(^uint32(uv >> 1))
		} else {
			val += int32(uint32(uv >> 1))
		}
		next := pc + d*quantum
		if next < pc {
			return false
		}
		if !emit(pc, next, val) {
			return true
		}
		pc = next
	}
	return true
}

// Extent returns how many bytes of tab [Decode] reads for the function
// starting at entry up to end: tab[:Extent(...)] decodes as tab does, so a
// caller can keep that prefix alone. It returns -1 for a malformed table.
func Extent(tab []byte, entry, end, quantum uint64) int {
	n := 0
	pc := entry
	for first := true; pc < end; first = false {
		uv, k := binary.Uvarint(tab[n:])
		if k <= 0 || uv > math.MaxUint32 {
			return -1
		}
		n += k
		if uv == 0 && !first {
			return n
		}
		d, k := binary.Uvarint(tab[n:])
		if k <= 0 || d > math.MaxUint32 {
			return -1
		}
		n += k
		next := pc + d*quantum
		if next < pc {
			return -1
		}
		pc = next
	}
	return n
}

// Value returns the value at pc of the pcvalue table tab of the function
// starting at entry, -1 when the table does not cover pc.
func Value(tab []byte, entry, pc, quantum uint64) int32 {
	v := int32(-1)
	Decode(tab, entry, math.MaxUint64, quantum, func(_, next uint64, val int32) bool {
		if pc < next {
			v = val
			return false
		}
		return true
	})
	return v
}
