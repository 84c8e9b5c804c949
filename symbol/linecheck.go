package symbol

import (
	"debug/dwarf"
	"encoding/binary"
	"errors"
	"runtime"
	"sync"
	"weak"
)

// maxZeroSizeEntries bounds the directory or file entries a DWARF 5 line
// table header may declare when its entries take no bytes (every field
// of a form that writes nothing): such a header says nothing its bytes
// can bound. Headers of DWARF 2 to 4, whose lists end with an empty
// entry, are read as they come and need no bound.
const maxZeroSizeEntries = 1 << 16

// dwarfLines holds the .debug_line of each DWARF data this package made
// ([newDWARF], [File.readDWARF]), for [safeLineReader] to check the header
// a unit points at before debug/dwarf reads it; an entry goes with its
// data.
var dwarfLines sync.Map // weak.Pointer[dwarf.Data] -> []byte

// withLines notes that d's .debug_line is line, and returns d.
func withLines(d *dwarf.Data, line []byte) *dwarf.Data {
	if d != nil {
		w := weak.Make(d)
		dwarfLines.Store(w, line)
		runtime.AddCleanup(d, func(w weak.Pointer[dwarf.Data]) { dwarfLines.Delete(w) }, w)
	}
	return d
}

// safeLineReader returns d's line table of unit cu, as d.LineReader does,
// after checking that its header is safe to read ([lineHeaderSafe]):
// debug/dwarf makes the slices for a DWARF 5 header's directory and
// file entries at the sizes the header declares before reading one
// (Go 1.26's LineReader), so that a header declaring 2^40 entries in 30
// bytes ended the process, out of memory, which no recover catches. nil
// when the header is not safe, or d was not made here.
func safeLineReader(d *dwarf.Data, cu *dwarf.Entry) (*dwarf.LineReader, error) {
	v, ok := dwarfLines.Load(weak.Make(d))
	if !ok {
		return nil, errors.New("DWARF data of unknown line tables")
	}
	line := v.([]byte)
	off, ok := cu.Val(dwarf.AttrStmtList).(int64)
	if !ok {
		return d.LineReader(cu) // none: debug/dwarf reads nothing
	}
	if off < 0 || off >= int64(len(line)) {
		return nil, &FormatError{Off: off, Msg: "line table outside .debug_line"}
	}
	if !lineTableSafe(line[off:]) {
		return nil, &FormatError{Off: off, Msg: "line table header declares more entries than it holds"}
	}
	return d.LineReader(cu)
}

// lineTableSafe checks the line table at the start of b, what follows
// it in its section; of a little-endian file, as every target nsprof
// records is (a big-endian one's tables would be refused).
func lineTableSafe(b []byte) bool {
	n, size, ok := unitLength(b)
	if !ok {
		return true // nothing debug/dwarf could read
	}
	return lineHeaderSafe(b[size:size+min(n, len(b)-size)], size == 12)
}

// unitLength reads the unit length at the start of b: the length, the
// bytes it took (4, or 12 for 64-bit DWARF), and whether it was there.
func unitLength(b []byte) (n, size int, ok bool) {
	if len(b) < 4 {
		return 0, 0, false
	}
	l := uint64(binary.LittleEndian.Uint32(b))
	size = 4
	if l == 0xffffffff {
		if len(b) < 12 {
			return 0, 0, false
		}
		l, size = binary.LittleEndian.Uint64(b[4:]), 12
	}
	if l > uint64(len(b)) {
		l = uint64(len(b))
	}
	return int(l), size, true
}

// lineHeaderSafe checks one line table, b after its unit length.
func lineHeaderSafe(b []byte, dwarf64 bool) bool {
	r := hdrReader{b: b, dwarf64: dwarf64}
	if len(b) < 2 || r.u16() != 5 {
		return true // older versions are read as they come; padding
	}
	r.skip(2) // address and segment selector sizes
	hdrLen := r.offset()
	if r.bad {
		return false
	}
	if hdrLen < uint64(len(r.b)-r.p) {
		r.b = r.b[:r.p+int(hdrLen)] // the entries lie within the header
	}
	r.skip(5) // instruction length, operations, is_stmt, line base and range
	opcodeBase := r.u8()
	if opcodeBase > 0 {
		r.skip(int(opcodeBase) - 1)
	}
	for range 2 { // directories, then files
		formats := make([]uint64, r.u8())
		for i := range formats {
			r.uleb() // content type
			formats[i] = r.uleb()
		}
		count := r.uleb()
		if r.bad {
			return false
		}
		least := 0
		for _, f := range formats {
			least += minFormSize(f, dwarf64)
		}
		if least == 0 && count > maxZeroSizeEntries || least > 0 && count > uint64(len(r.b)-r.p)/uint64(least) {
			return false
		}
		for range count {
			for _, f := range formats {
				if !r.skipForm(f) {
					return false
				}
			}
		}
	}
	return !r.bad
}

// DWARF forms a line table header's entries may use.
const (
	formBlock2      = 0x03
	formBlock4      = 0x04
	formData2       = 0x05
	formData4       = 0x06
	formData8       = 0x07
	formString      = 0x08
	formBlock       = 0x09
	formBlock1      = 0x0a
	formData1       = 0x0b
	formFlag        = 0x0c
	formSdata       = 0x0d
	formStrp        = 0x0e
	formUdata       = 0x0f
	formSecOffset   = 0x17
	formFlagPresent = 0x19
	formStrx        = 0x1a
	formStrpSup     = 0x1d
	formData16      = 0x1e
	formLineStrp    = 0x1f
	formStrx1       = 0x25
	formStrx2       = 0x26
	formStrx3       = 0x27
	formStrx4       = 0x28
)

// minFormSize returns the fewest bytes a value of form f takes; 0 for a
// form that may take none or is not known (skipForm refuses those).
func minFormSize(f uint64, dwarf64 bool) int {
	switch f {
	case formData1, formFlag, formStrx1, formString, formSdata, formUdata, formStrx, formBlock, formBlock1:
		return 1
	case formData2, formStrx2, formBlock2:
		return 2
	case formStrx3:
		return 3
	case formData4, formStrx4, formBlock4:
		return 4
	case formData8:
		return 8
	case formData16:
		return 16
	case formStrp, formLineStrp, formStrpSup, formSecOffset:
		if dwarf64 {
			return 8
		}
		return 4
	}
	return 0
}

// hdrReader reads a line table header; bad is set once it ran past its
// end.
type hdrReader struct {
	b       []byte
	p       int
	dwarf64 bool
	bad     bool
}

func (r *hdrReader) skip(n int) {
	if n < 0 || n > len(r.b)-r.p {
		r.bad, r.p = true, len(r.b)
		return
	}
	r.p += n
}

func (r *hdrReader) u8() uint8 {
	if r.p >= len(r.b) {
		r.bad = true
		return 0
	}
	r.p++
	return r.b[r.p-1]
}

func (r *hdrReader) u16() uint16 {
	if len(r.b)-r.p < 2 {
		r.bad, r.p = true, len(r.b)
		return 0
	}
	r.p += 2
	return binary.LittleEndian.Uint16(r.b[r.p-2:])
}

func (r *hdrReader) offset() uint64 {
	n := 4
	if r.dwarf64 {
		n = 8
	}
	if len(r.b)-r.p < n {
		r.bad, r.p = true, len(r.b)
		return 0
	}
	r.p += n
	if n == 8 {
		return binary.LittleEndian.Uint64(r.b[r.p-8:])
	}
	return uint64(binary.LittleEndian.Uint32(r.b[r.p-4:]))
}

func (r *hdrReader) uleb() uint64 {
	v, n := binary.Uvarint(r.b[r.p:])
	if n <= 0 {
		r.bad, r.p = true, len(r.b)
		return 0
	}
	r.p += n
	return v
}

// skipForm skips a value of form f; false for a form a line table header
// may not use, or a value past the header's end.
func (r *hdrReader) skipForm(f uint64) bool {
	switch f {
	case formString:
		for r.u8() != 0 && !r.bad {
		}
	case formSdata, formUdata, formStrx:
		r.uleb()
	case formBlock:
		r.skip(int(min(r.uleb(), uint64(len(r.b)))))
	case formBlock1:
		r.skip(int(r.u8()))
	case formBlock2:
		r.skip(int(r.u16()))
	case formBlock4:
		if len(r.b)-r.p < 4 {
			r.bad = true
		} else {
			n := binary.LittleEndian.Uint32(r.b[r.p:])
			r.p += 4
			r.skip(int(min(uint64(n), uint64(len(r.b)))))
		}
	case formFlagPresent:
	default:
		n := minFormSize(f, r.dwarf64)
		if n == 0 {
			return false
		}
		r.skip(n)
	}
	return !r.bad
}
