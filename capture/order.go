package capture

import (
	"encoding/binary"
	"unicode/utf8"
)

// order reads and writes multi-byte fields in one byte order. Bitfields are
// laid out as GCC does for the C structs: from the least significant bit on
// little-endian, from the most significant bit on big-endian.
type order struct{ big bool }

func (o order) u16(b []byte) uint16 {
	if o.big {
		return binary.BigEndian.Uint16(b)
	}
	return binary.LittleEndian.Uint16(b)
}

func (o order) u32(b []byte) uint32 {
	if o.big {
		return binary.BigEndian.Uint32(b)
	}
	return binary.LittleEndian.Uint32(b)
}

func (o order) u64(b []byte) uint64 {
	if o.big {
		return binary.BigEndian.Uint64(b)
	}
	return binary.LittleEndian.Uint64(b)
}

func (o order) put16(b []byte, v uint16) {
	if o.big {
		binary.BigEndian.PutUint16(b, v)
	} else {
		binary.LittleEndian.PutUint16(b, v)
	}
}

func (o order) put32(b []byte, v uint32) {
	if o.big {
		binary.BigEndian.PutUint32(b, v)
	} else {
		binary.LittleEndian.PutUint32(b, v)
	}
}

func (o order) put64(b []byte, v uint64) {
	if o.big {
		binary.BigEndian.PutUint64(b, v)
	} else {
		binary.LittleEndian.PutUint64(b, v)
	}
}

// bits extracts the field of width bits that starts at declaration bit
// position pos of a 32-bit C bitfield word.
func (o order) bits(word uint32, pos, width uint) uint32 {
	if o.big {
		pos = 32 - pos - width
	}
	return word >> pos & (1<<width - 1)
}

// pack places v in the field of width bits at declaration position pos.
func (o order) pack(v uint32, pos, width uint) uint32 {
	if o.big {
		pos = 32 - pos - width
	}
	return (v & (1<<width - 1)) << pos
}

// bits16 and pack16 do the same for 16-bit bitfield words.
func (o order) bits16(word uint16, pos, width uint) uint16 {
	if o.big {
		pos = 16 - pos - width
	}
	return word >> pos & (1<<width - 1)
}

func (o order) pack16(v uint16, pos, width uint) uint16 {
	if o.big {
		pos = 16 - pos - width
	}
	return (v & (1<<width - 1)) << pos
}

// cstring returns b up to its first NUL byte.
func cstring(b []byte) string {
	for i, c := range b {
		if c == 0 {
			return string(b[:i])
		}
	}
	return string(b)
}

// fieldString returns the string in b, a fixed-size char array or the
// string that ends a frame: up to its first NUL, and never its last byte.
// The format's strings are NUL-terminated within their field; when the
// last byte is not NUL, libsysprof-capture's reader overwrites it with one,
// and the Writer never fills it. Reading it the same way keeps what is read
// what would be written back.
func fieldString(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return cstring(b[:len(b)-1])
}

// putFixed copies s into the fixed-size array b, truncated so that a NUL
// always follows and no UTF-8 sequence is cut (strlcpy semantics). b must
// already be zero.
func putFixed(b []byte, s string) {
	if len(s) > len(b)-1 {
		s = truncateUTF8(s, len(b)-1)
	}
	copy(b, s)
}

// truncateUTF8 cuts s to at most n bytes without splitting a rune.
func truncateUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// align rounds n up to a multiple of Align.
func align(n int) int { return (n + Align - 1) &^ (Align - 1) }
