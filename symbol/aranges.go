package symbol

import (
	"cmp"
	"encoding/binary"
	"slices"
	"sort"
)

// arange is one address range of .debug_aranges: the code in [lo, hi)
// belongs to the compilation unit at unit in .debug_info.
type arange struct {
	lo, hi uint64
	unit   uint64
}

// maxArangeScan bounds how many overlapping ranges a lookup looks back
// through.
const maxArangeScan = 16

// parseAranges reads every address range set of a .debug_aranges
// section, sorted by start address. Ranges of length zero are left out. A
// malformed set ends the parse; the sets before it are kept and the error
// names the offset of the bad one.
func parseAranges(b []byte, order binary.ByteOrder) ([]arange, error) {
	var out []arange
	for off := uint64(0); off < uint64(len(b)); {
		set := off
		if uint64(len(b))-off < 4 {
			return sortAranges(out), &FormatError{Off: int64(set), Msg: "truncated .debug_aranges set header"}
		}
		length := uint64(order.Uint32(b[off:]))
		off += 4
		offSize := uint64(4)
		if length == 0xffffffff {
			if uint64(len(b))-off < 8 {
				return sortAranges(out), &FormatError{Off: int64(set), Msg: "truncated .debug_aranges set header"}
			}
			length = order.Uint64(b[off:])
			off += 8
			offSize = 8
		} else if length >= 0xfffffff0 {
			return sortAranges(out), &FormatError{Off: int64(set), Msg: "reserved .debug_aranges set length", Val: length}
		}
		if length > uint64(len(b))-off {
			return sortAranges(out), &FormatError{Off: int64(set), Msg: ".debug_aranges set longer than the section", Val: length}
		}
		body := b[off : off+length]
		next := off + length
		// version (2), unit offset, address size (1), segment size (1)
		if uint64(len(body)) < 2+offSize+2 {
			return sortAranges(out), &FormatError{Off: int64(set), Msg: "truncated .debug_aranges set header"}
		}
		if v := order.Uint16(body); v != 2 {
			return sortAranges(out), &FormatError{Off: int64(set), Msg: "unsupported .debug_aranges version", Val: v}
		}
		var unit uint64
		if offSize == 8 {
			unit = order.Uint64(body[2:])
		} else {
			unit = uint64(order.Uint32(body[2:]))
		}
		asize, ssize := uint64(body[2+offSize]), uint64(body[3+offSize])
		if (asize != 4 && asize != 8) || ssize != 0 {
			return sortAranges(out), &FormatError{Off: int64(set), Msg: "unsupported .debug_aranges address or segment size", Val: [2]uint64{asize, ssize}}
		}
		// The tuples start at a multiple of their size from the set's start.
		hdr := (off - set) + 2 + offSize + 2
		t := (hdr + 2*asize - 1) / (2 * asize) * (2 * asize)
		for p := t - (off - set); p+2*asize <= uint64(len(body)); p += 2 * asize {
			var lo, n uint64
			if asize == 8 {
				lo, n = order.Uint64(body[p:]), order.Uint64(body[p+8:])
			} else {
				lo, n = uint64(order.Uint32(body[p:])), uint64(order.Uint32(body[p+4:]))
			}
			if lo == 0 && n == 0 {
				break
			}
			if n > 0 && lo+n > lo {
				out = append(out, arange{lo: lo, hi: lo + n, unit: unit})
			}
		}
		off = next
	}
	return sortAranges(out), nil
}

func sortAranges(a []arange) []arange {
	slices.SortStableFunc(a, func(x, y arange) int { return cmp.Compare(x.lo, y.lo) })
	return a
}

// findArange returns the unit whose range holds pc in sorted ranges a.
func findArange(a []arange, pc uint64) (uint64, bool) {
	i := sort.Search(len(a), func(i int) bool { return a[i].lo > pc }) - 1
	for k := 0; i >= 0 && k < maxArangeScan; i, k = i-1, k+1 {
		if pc < a[i].hi {
			return a[i].unit, true
		}
	}
	return 0, false
}
