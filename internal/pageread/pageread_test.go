package pageread

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

// TestAt: bytes read in pages give what the bytes held whole give, across
// page boundaries, at the end and past it, within the bound on pages.
func TestAt(t *testing.T) {
	data := make([]byte, 3*PageSize+123)
	for i := range data {
		data[i] = byte(i*7 + i/251)
	}
	const base = 100 // the range starts inside the reader
	r := bytes.NewReader(append(make([]byte, base), data...))
	lazy, held := File(r, base, uint64(len(data)), 0, 64), Held(data)
	small := File(r, base, uint64(len(data)), 0, 2)
	big := File(r, base, uint64(len(data)), 3*PageSize, 2)
	rng := rand.New(rand.NewPCG(1, 2))
	check := func(off, n uint64) {
		want := held.At(off, n)
		for _, s := range []*Source{lazy, small, big} {
			if got := s.At(off, n); !bytes.Equal(got, want) {
				t.Fatalf("At(%d, %d): %d bytes read in pages, %d held, differing", off, n, len(got), len(want))
			}
		}
		if small.Pages() > 2 {
			t.Fatalf("%d pages kept, bound 2", small.Pages())
		}
	}
	for _, off := range []uint64{0, PageSize - 1, PageSize, 2*PageSize - 3, uint64(len(data)) - 1, uint64(len(data)), uint64(len(data)) + 5} {
		for _, n := range []uint64{0, 1, 4, 256, PageSize + 10, 1 << 20} {
			check(off, n)
		}
	}
	for range 1000 {
		check(rng.Uint64N(uint64(len(data))+10), rng.Uint64N(3*PageSize))
	}
	if lazy.Pages() != 4 {
		t.Errorf("%d pages kept, want 4", lazy.Pages())
	}
}

// TestWindow: a window grows until the reader has what it needs, and
// stops at the end of the range.
func TestWindow(t *testing.T) {
	data := bytes.Repeat([]byte{'x'}, 5000)
	data[4000] = 0
	s := File(bytes.NewReader(data), 0, uint64(len(data)), 0, 8)
	var seen []int
	s.Window(10, func(b []byte) bool {
		seen = append(seen, len(b))
		return bytes.IndexByte(b, 0) >= 0
	})
	if len(seen) != 5 || seen[4] != 4096 {
		t.Errorf("windows %v, want 256 to 4096", seen)
	}
	seen = nil
	s.Window(4001, func(b []byte) bool { seen = append(seen, len(b)); return false })
	if len(seen) != 3 || seen[2] != 999 {
		t.Errorf("windows to the end %v, want 256, 512, 999", seen)
	}
}

// With ReusePages, pages let go are read into again: the bytes read are
// right across evictions, and a pass over a range many times the pages
// kept makes no new page once the first ones are made.
func TestReusePages(t *testing.T) {
	data := make([]byte, 1<<20)
	for i := range data {
		data[i] = byte(i*7 + i>>9)
	}
	s := File(bytes.NewReader(data), 0, uint64(len(data)), 4096, 4)
	s.ReusePages()
	pass := func() {
		for off := 0; off+100 <= len(data); off += 1000 {
			if b := s.At(uint64(off), 100); !bytes.Equal(b, data[off:off+100]) {
				t.Fatalf("At(%d, 100) = %x..., want %x...", off, b[:min(len(b), 8)], data[off:off+8])
			}
		}
	}
	pass()
	// Reading 256 pages through 4 kept: without reuse, 256 pages of
	// 4 KiB made again at each pass.
	if n := testing.AllocsPerRun(3, pass); n > 60 {
		t.Errorf("%.0f allocations a pass, want few: pages are made anew", n)
	}
}
