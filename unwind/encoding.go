package unwind

import "encoding/binary"

// DWARF pointer encodings (DW_EH_PE_*): the low nibble is the format, the
// high nibble what the value is relative to.
const (
	peAbsptr  = 0x00
	peULEB128 = 0x01
	peUdata2  = 0x02
	peUdata4  = 0x03
	peUdata8  = 0x04
	peSLEB128 = 0x09
	peSdata2  = 0x0a
	peSdata4  = 0x0b
	peSdata8  = 0x0c

	pePCRel   = 0x10
	peTextRel = 0x20
	peDataRel = 0x30
	peFuncRel = 0x40
	peAligned = 0x50

	peIndirect = 0x80
	peOmit     = 0xff
)

// buf reads little-endian values from b. A read past the end returns zero
// and sets bad; callers check bad before trusting what they read.
type buf struct {
	b   []byte
	off int
	bad bool
	// vaddr is the address b[0] is loaded at, the base of pc-relative
	// pointers; data and text are the bases of datarel and textrel ones.
	vaddr, data, text uint64
}

func (r *buf) left() int { return len(r.b) - r.off }

func (r *buf) fail() {
	r.bad = true
	r.off = len(r.b)
}

func (r *buf) u8() byte {
	if r.left() < 1 {
		r.fail()
		return 0
	}
	v := r.b[r.off]
	r.off++
	return v
}

func (r *buf) u16() uint16 {
	if r.left() < 2 {
		r.fail()
		return 0
	}
	v := binary.LittleEndian.Uint16(r.b[r.off:])
	r.off += 2
	return v
}

func (r *buf) u32() uint32 {
	if r.left() < 4 {
		r.fail()
		return 0
	}
	v := binary.LittleEndian.Uint32(r.b[r.off:])
	r.off += 4
	return v
}

func (r *buf) u64() uint64 {
	if r.left() < 8 {
		r.fail()
		return 0
	}
	v := binary.LittleEndian.Uint64(r.b[r.off:])
	r.off += 8
	return v
}

func (r *buf) uleb() uint64 {
	var v uint64
	for shift := uint(0); ; shift += 7 {
		c := r.u8()
		if r.bad {
			return 0
		}
		if shift < 64 {
			v |= uint64(c&0x7f) << shift
		}
		if c&0x80 == 0 {
			return v
		}
	}
}

func (r *buf) sleb() int64 {
	var v int64
	shift := uint(0)
	for {
		c := r.u8()
		if r.bad {
			return 0
		}
		if shift < 64 {
			v |= int64(c&0x7f) << shift
		}
		shift += 7
		if c&0x80 == 0 {
			if shift < 64 && c&0x40 != 0 {
				v |= -1 << shift
			}
			return v
		}
	}
}

// bytes returns the next n bytes, or nil and bad if there are fewer.
func (r *buf) bytes(n uint64) []byte {
	if uint64(r.left()) < n {
		r.fail()
		return nil
	}
	b := r.b[r.off : r.off+int(n)]
	r.off += int(n)
	return b
}

// cstring returns the bytes up to the next NUL and skips the NUL.
func (r *buf) cstring() []byte {
	for i := r.off; i < len(r.b); i++ {
		if r.b[i] == 0 {
			s := r.b[r.off:i]
			r.off = i + 1
			return s
		}
	}
	r.fail()
	return nil
}

// ptr reads a pointer in encoding enc. Indirect pointers are returned as
// the address that holds the value: nothing here reads process memory,
// and only personality routines use them. Function-relative values are
// returned unrelocated. ok is false for an unknown format.
func (r *buf) ptr(enc byte) (v uint64, ok bool) {
	if enc == peOmit {
		return 0, true
	}
	at := r.vaddr + uint64(r.off)
	if enc&0x70 == peAligned {
		for r.off%8 != 0 && !r.bad {
			r.u8()
		}
		at = r.vaddr + uint64(r.off)
	}
	switch enc & 0x0f {
	case peAbsptr, peUdata8:
		v = r.u64()
	case peULEB128:
		v = r.uleb()
	case peUdata2:
		v = uint64(r.u16())
	case peUdata4:
		v = uint64(r.u32())
	case peSLEB128:
		v = uint64(r.sleb())
	case peSdata2:
		v = uint64(int64(int16(r.u16())))
	case peSdata4:
		v = uint64(int64(int32(r.u32())))
	case peSdata8:
		v = r.u64()
	default:
		return 0, false
	}
	switch enc & 0x70 {
	case pePCRel:
		v += at
	case peTextRel:
		v += r.text
	case peDataRel:
		v += r.data
	case 0, peFuncRel, peAligned:
	default:
		return 0, false
	}
	return v, true
}
