package symbol

import (
	"encoding/binary"
	"fmt"
)

// kallsymsIndexEntry is the size of one symbol in [Kallsyms.AppendIndex]'s
// encoding: its address (8 bytes), where its name starts in the text (4)
// and its rank (1), little-endian.
const kallsymsIndexEntry = 13

// AppendIndex appends k's index to b, for [KallsymsWithIndex] to take
// back with the same text instead of parsing it again: parsing the
// 120 k lines of a distribution kernel's kallsyms takes several
// milliseconds, the encoded index 1.6 MB.
func (k *Kallsyms) AppendIndex(b []byte) []byte {
	b = binary.LittleEndian.AppendUint32(b, uint32(k.Len()))
	return append(b, k.idx...)
}

// KallsymsWithIndex returns the index of data that [Kallsyms.AppendIndex]
// encoded, as [NewKallsyms] of data would make it, keeping data and
// index, which must not be modified afterwards (index is used in place,
// not copied). The
// index is checked as far as lookups rely on it: symbols in increasing
// address order, none at address zero, each name starting in data after
// a line's "ADDR TYPE " and not empty. It does no I/O.
func KallsymsWithIndex(data, index []byte) (*Kallsyms, error) {
	return KallsymsWithIndexDropping(data, index, 0, nil)
}

// KallsymsWithIndexDropping is [KallsymsWithIndex], calling drop after
// every every symbols checked (and not at all when every is 0): the check
// touches the whole index and every name, and a caller that maps data
// and index from a file can let go of the pages touched so far, which
// would otherwise be resident all at once (6.8 MB of a distribution
// kernel's, more than a busy system-wide recording's heap grew).
func KallsymsWithIndexDropping(data, index []byte, every int, drop func()) (*Kallsyms, error) {
	bad := func(msg string, args ...any) error {
		return &SyntaxError{File: "kallsyms index", Msg: fmt.Sprintf(msg, args...)}
	}
	if len(data) > 1<<32-1 || len(index) < 4 {
		return nil, bad("%d bytes of index for %d of text", len(index), len(data))
	}
	n := int(binary.LittleEndian.Uint32(index))
	index = index[4:]
	if n == 0 || len(index) != n*kallsymsIndexEntry {
		return nil, bad("%d bytes for %d symbols", len(index), n)
	}
	k := &Kallsyms{data: data, idx: index}
	var prev uint64
	for i := range n {
		s := k.sym(i)
		switch {
		case s.addr == 0 || i > 0 && s.addr <= prev:
			return nil, bad("symbol %d at %#x out of order", i, s.addr)
		case s.rank > 2:
			return nil, bad("symbol %d of rank %d", i, s.rank)
		case s.off < 3 || int(s.off) >= len(data) || data[s.off-1] != ' ' || data[s.off-3] != ' ':
			return nil, bad("symbol %d's name at %d is not after a line's type", i, s.off)
		case data[s.off] <= ' ':
			// (nameBytes, whose search for the line's end was most
			// of taking an index back, is not needed to tell.)
			return nil, bad("symbol %d's name at %d is empty", i, s.off)
		}
		prev = s.addr
		if every > 0 && (i+1)%every == 0 {
			drop()
		}
	}
	return k, nil
}
