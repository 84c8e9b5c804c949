package record

import (
	"encoding/binary"
	"errors"
	"slices"
	"testing"
)

// putRecord writes a record at position pos of data as the preload does,
// with a pad record first when it would not fit before the end; it
// returns the new tail.
func putRecord(data []byte, pos uint64, kind uint16, time int64, addr uint64, size int64, addrs []uint64) uint64 {
	mask := uint64(len(data) - 1)
	ln := uint64(recHeaderSize + 8*len(addrs))
	off := pos & mask
	if off+ln > uint64(len(data)) {
		pad := uint64(len(data)) - off
		binary.NativeEndian.PutUint32(data[off:], uint32(pad))
		binary.NativeEndian.PutUint16(data[off+4:], recPad)
		pos += pad
		off = 0
	}
	b := data[off:]
	binary.NativeEndian.PutUint32(b, uint32(ln))
	binary.NativeEndian.PutUint16(b[4:], kind)
	binary.NativeEndian.PutUint16(b[6:], uint16(len(addrs)))
	binary.NativeEndian.PutUint64(b[8:], uint64(time))
	binary.NativeEndian.PutUint64(b[16:], addr)
	binary.NativeEndian.PutUint64(b[24:], uint64(size))
	for i, a := range addrs {
		binary.NativeEndian.PutUint64(b[recHeaderSize+8*i:], a)
	}
	return pos + ln
}

func TestRingDecodeWraps(t *testing.T) {
	data := make([]byte, 256)
	var d ringDecoder
	var head, tail uint64
	var got []memRecord
	collect := func(r *memRecord) {
		c := *r
		c.Addrs = slices.Clone(r.Addrs)
		got = append(got, c)
	}
	// Several laps: allocations with stacks and frees, padding at the end.
	for i := range 40 {
		if i%2 == 0 {
			tail = putRecord(data, tail, recAlloc, int64(i), uint64(0x1000+i), int64(i+1), []uint64{0x400000 + uint64(i), 0x400100})
		} else {
			tail = putRecord(data, tail, recFree, int64(i), uint64(0x1000+i-1), 99, nil)
		}
		var err error
		if head, err = d.decode(data, head, tail, collect); err != nil {
			t.Fatal(err)
		}
	}
	if len(got) != 40 {
		t.Fatalf("got %d records, want 40", len(got))
	}
	for i, r := range got {
		if r.Time != int64(i) || r.Free != (i%2 == 1) {
			t.Fatalf("record %d: %+v", i, r)
		}
		if r.Free && (r.Size != 0 || len(r.Addrs) != 0) {
			t.Fatalf("free %d has size %d and %d addrs", i, r.Size, len(r.Addrs))
		}
		if !r.Free && (r.Size != int64(i+1) || len(r.Addrs) != 2 || r.Addrs[0] != 0x400000+uint64(i)) {
			t.Fatalf("alloc %d: %+v", i, r)
		}
	}
}

func TestRingDecodeMalformed(t *testing.T) {
	for _, tc := range []struct {
		name  string
		fill  func(b []byte)
		tail  uint64
		dsize int
	}{
		{"zero length", func(b []byte) {}, 32, 128},
		{"length past tail", func(b []byte) { binary.NativeEndian.PutUint32(b, 64); binary.NativeEndian.PutUint16(b[4:], recAlloc) }, 32, 128},
		{"unaligned length", func(b []byte) { binary.NativeEndian.PutUint32(b, 33) }, 40, 128},
		{"addrs do not fit", func(b []byte) {
			binary.NativeEndian.PutUint32(b, 32)
			binary.NativeEndian.PutUint16(b[4:], recAlloc)
			binary.NativeEndian.PutUint16(b[6:], 3)
		}, 32, 128},
		{"unknown kind", func(b []byte) { binary.NativeEndian.PutUint32(b, 32); binary.NativeEndian.PutUint16(b[4:], 9) }, 32, 128},
		{"tail beyond ring", func(b []byte) {}, 256, 128},
		{"not a power of two", func(b []byte) {}, 32, 96},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := make([]byte, tc.dsize)
			tc.fill(data)
			var d ringDecoder
			n := 0
			head, err := d.decode(data, 0, tc.tail, func(*memRecord) { n++ })
			var re *RingError
			if !errors.As(err, &re) || head != 0 || n != 0 {
				t.Fatalf("got head %d, %d records, err %v; want a RingError at 0", head, n, err)
			}
		})
	}
}

func TestParseHello(t *testing.T) {
	b := make([]byte, helloSize)
	binary.NativeEndian.PutUint32(b, ringMagic)
	binary.NativeEndian.PutUint32(b[4:], ringVersion)
	binary.NativeEndian.PutUint32(b[8:], 7)
	binary.NativeEndian.PutUint32(b[12:], 9)
	binary.NativeEndian.PutUint64(b[16:], 4096+8192)
	h, err := parseHello(b)
	if err != nil || h.PID != 7 || h.TID != 9 || h.RingSize != 12288 {
		t.Fatalf("got %+v, %v", h, err)
	}
	if checkRingSize(h.RingSize) != nil || checkRingSize(4096+100) == nil || checkRingSize(0) == nil {
		t.Fatal("checkRingSize")
	}
	binary.NativeEndian.PutUint32(b[4:], ringVersion-1)
	if _, err := parseHello(b); err == nil {
		t.Fatal("wrong version accepted")
	}
	if _, err := parseHello(b[:8]); err == nil {
		t.Fatal("short message accepted")
	}
}

// FuzzRingDecode feeds arbitrary ring contents and positions to the
// decoder: it must never panic, never read past tail, and consume all
// records up to tail exactly when it reports no error.
func FuzzRingDecode(f *testing.F) {
	data := make([]byte, 128)
	tail := putRecord(data, 0, recAlloc, 1, 0x1000, 24, []uint64{0x401000, 0x402000})
	tail = putRecord(data, tail, recFree, 2, 0x1000, 0, nil)
	f.Add(data, uint64(0), tail)
	wrap := make([]byte, 64)
	t2 := putRecord(wrap, 24, recFree, 3, 0x2000, 0, nil)
	t2 = putRecord(wrap, t2, recAlloc, 4, 0x3000, 8, []uint64{1})
	f.Add(wrap, uint64(24), t2)
	f.Fuzz(func(t *testing.T, data []byte, head, tail uint64) {
		var d ringDecoder
		n := 0
		next, err := d.decode(data, head, tail, func(r *memRecord) {
			n++
			if r.Free && (r.Size != 0 || len(r.Addrs) != 0) {
				t.Fatalf("free with size %d, %d addrs", r.Size, len(r.Addrs))
			}
		})
		if next < head || next > max(head, tail) {
			t.Fatalf("position %d outside [%d, %d]", next, head, tail)
		}
		if err == nil && next != tail {
			t.Fatalf("no error but stopped at %d of %d", next, tail)
		}
		if err != nil {
			var re *RingError
			if !errors.As(err, &re) || re.Off != next {
				t.Fatalf("error %v does not name position %d", err, next)
			}
		}
	})
}

// Stacks are read in place from an aligned ring and copied from an
// unaligned one, with the same values.
func TestRingStackAlignment(t *testing.T) {
	buf := make([]byte, 8*4+1)
	var d ringDecoder
	for _, shift := range []int{0, 1} {
		b := buf[shift : shift+8*4]
		for i := range 4 {
			binary.NativeEndian.PutUint64(b[8*i:], 0x1000+uint64(i))
		}
		got := d.stack(b, 4)
		if !slices.Equal(got, []uint64{0x1000, 0x1001, 0x1002, 0x1003}) {
			t.Errorf("shift %d: %#x", shift, got)
		}
	}
	if d.stack(buf, 0) != nil {
		t.Error("no addresses gave a stack")
	}
}
