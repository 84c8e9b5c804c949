package gopclntab

import (
	"encoding/binary"
	"errors"
	"testing"
)

// A pcvalue table (values start at -1): +4 (3) for 2 quanta, then +3 (6)
// for 1, then -8 (-2) for 3, then the end.
var pcTab = []byte{
	8, 2, // +4 (zigzag 8), 2
	6, 1, // +3, 1
	15, 3, // -8 (zigzag 15), 3
	0,
}

func TestValue(t *testing.T) {
	for pc, want := range map[uint64]int32{
		0x100: 3, 0x100 + 7: 3, 0x100 + 8: 6, 0x100 + 12: -2, 0x100 + 23: -2, 0x100 + 24: -1,
	} {
		if got := Value(pcTab, 0x100, pc, 4); got != want {
			t.Errorf("Value(%#x) = %d, want %d", pc, got, want)
		}
	}
	var runs [][3]int64
	ok := Decode(pcTab, 0x100, 0x100+20, 4, func(pc, next uint64, v int32) bool {
		runs = append(runs, [3]int64{int64(pc), int64(next), int64(v)})
		return true
	})
	if !ok || len(runs) != 3 || runs[2] != [3]int64{0x10c, 0x118, -2} {
		t.Errorf("Decode: %t %v", ok, runs)
	}
	if Decode([]byte{0x80}, 0, 10, 1, func(uint64, uint64, int32) bool { return true }) {
		t.Error("truncated varint: no error")
	}
}

func TestParseHeader(t *testing.T) {
	hdr := make([]byte, 72+16)
	le := binary.LittleEndian
	le.PutUint32(hdr, Magic120)
	hdr[6], hdr[7] = 1, 8
	le.PutUint64(hdr[8:], 1)   // nfunc
	le.PutUint64(hdr[64:], 72) // functab
	h, err := ParseHeader(hdr, le)
	if err != nil || h == nil || h.NFunc != 1 || len(h.FuncTab) != 16 || h.Quantum != 1 {
		t.Fatalf("ParseHeader = %+v, %v", h, err)
	}
	le.PutUint64(hdr[64:], 1000)
	var fe *FormatError
	if _, err := ParseHeader(hdr, le); !errors.As(err, &fe) || fe.Off != 64 {
		t.Errorf("offset past the end: %v", err)
	}
	le.PutUint32(hdr, Magic116)
	if h, err := ParseHeader(hdr, le); h != nil || err != nil {
		t.Errorf("Go 1.16 magic: %+v, %v; want nil, nil", h, err)
	}
	if i := FindHeader(append(make([]byte, 16), hdr[:8]...), le); i != 16 {
		t.Errorf("FindHeader = %d, want 16", i)
	}
	hdr[6] = 3
	if i := FindHeader(append(make([]byte, 16), hdr[:8]...), le); i != -1 {
		t.Errorf("FindHeader with quantum 3 = %d, want -1", i)
	}
}

// TestExtent: the prefix Extent measures decodes as the whole table does,
// for functions that end at the terminator and before it, and a malformed
// table measures -1.
func TestExtent(t *testing.T) {
	runs := func(tab []byte, end uint64) (out [][3]int64, ok bool) {
		ok = Decode(tab, 0x100, end, 4, func(pc, next uint64, v int32) bool {
			out = append(out, [3]int64{int64(pc), int64(next), int64(v)})
			return true
		})
		return out, ok
	}
	long := append(append([]byte(nil), pcTab...), 9, 9, 9, 9) // bytes past the terminator
	for _, end := range []uint64{0x100, 0x100 + 4, 0x100 + 8, 0x100 + 12, 0x100 + 24, 0x100 + 100} {
		n := Extent(long, 0x100, end, 4)
		if n < 0 || n > len(pcTab) {
			t.Errorf("end %#x: Extent = %d, want 0..%d", end, n, len(pcTab))
			continue
		}
		want, wok := runs(long, end)
		got, gok := runs(long[:n], end)
		if gok != wok || len(got) != len(want) {
			t.Errorf("end %#x: prefix of %d decodes to %v %t, the table to %v %t", end, n, got, gok, want, wok)
		}
		for i := range min(len(got), len(want)) {
			if got[i] != want[i] {
				t.Errorf("end %#x: run %d = %v, want %v", end, i, got[i], want[i])
			}
		}
	}
	if n := Extent(pcTab, 0x100, 0x100+100, 4); n != len(pcTab) {
		t.Errorf("Extent to past the terminator = %d, want %d", n, len(pcTab))
	}
	if n := Extent([]byte{8, 0x80}, 0, 10, 1); n != -1 {
		t.Errorf("truncated varint: Extent = %d, want -1", n)
	}
}
