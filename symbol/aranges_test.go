package symbol

import (
	"encoding/binary"
	"errors"
	"slices"
	"testing"
)

// arangeSet encodes one .debug_aranges set (32-bit DWARF, 8-byte
// addresses) for unit, holding the [lo, lo+n) pairs given.
func arangeSet(unit uint32, pairs ...uint64) []byte {
	body := binary.LittleEndian.AppendUint16(nil, 2)
	body = binary.LittleEndian.AppendUint32(body, unit)
	body = append(body, 8, 0)
	body = append(body, 0, 0, 0, 0) // to 16 bytes from the set's start
	for _, v := range append(pairs, 0, 0) {
		body = binary.LittleEndian.AppendUint64(body, v)
	}
	return append(binary.LittleEndian.AppendUint32(nil, uint32(len(body))), body...)
}

func TestParseAranges(t *testing.T) {
	b := append(arangeSet(0x40, 0x2000, 0x100, 0x1000, 0x10), arangeSet(0x90, 0x1800, 0x20, 0x3000, 0)...)
	got, err := parseAranges(b, binary.LittleEndian)
	if err != nil {
		t.Fatal(err)
	}
	want := []arange{{0x1000, 0x1010, 0x40}, {0x1800, 0x1820, 0x90}, {0x2000, 0x2100, 0x40}}
	if !slices.Equal(got, want) {
		t.Fatalf("ranges %#v, want %#v (sorted, the empty one left out)", got, want)
	}
	for pc, unit := range map[uint64]uint64{0x1000: 0x40, 0x100f: 0x40, 0x181f: 0x90, 0x20ff: 0x40} {
		if u, ok := findArange(got, pc); !ok || u != unit {
			t.Errorf("findArange(%#x) = %#x, %v; want %#x", pc, u, ok, unit)
		}
	}
	for _, pc := range []uint64{0xfff, 0x1010, 0x1820, 0x2100} {
		if u, ok := findArange(got, pc); ok {
			t.Errorf("findArange(%#x) = %#x, want none", pc, u)
		}
	}

	// A damaged second set: the first is kept, the error names the
	// second's offset.
	first := arangeSet(0x40, 0x1000, 0x10)
	bad := append(append([]byte{}, first...), arangeSet(0x90, 0x1800, 0x20)...)
	binary.LittleEndian.PutUint32(bad[len(first):], 0x1000) // longer than the section
	got, err = parseAranges(bad, binary.LittleEndian)
	var fe *FormatError
	if !errors.As(err, &fe) || fe.Off != int64(len(first)) || len(got) != 1 {
		t.Errorf("damaged set: %v ranges, error %v; want the first set's range and an error at %d", got, err, len(first))
	}
}

// FuzzParseAranges parses arbitrary bytes as .debug_aranges: no panic,
// and what it returns is sorted, non-empty ranges.
func FuzzParseAranges(f *testing.F) {
	f.Add(arangeSet(0x40, 0x2000, 0x100, 0x1000, 0x10))
	f.Add(append(arangeSet(0, 1, 1), 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0, 0))
	f.Fuzz(func(t *testing.T, b []byte) {
		got, _ := parseAranges(b, binary.LittleEndian)
		for i, a := range got {
			if a.lo >= a.hi || (i > 0 && got[i-1].lo > a.lo) {
				t.Fatalf("range %d %#v: empty or out of order", i, a)
			}
		}
		if len(got) > 0 {
			findArange(got, got[len(got)-1].lo)
		}
	})
}
