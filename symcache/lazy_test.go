package symcache

import (
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"testing"

	"nsprof/symbol"
)

// manyRuns returns an entry of one function of n runs, 16 bytes apart,
// each 8 bytes long and of its own frame list (a line each; every third
// with an inlined frame), as libc cached whole is of 137 k.
func manyRuns(n int) *Entry {
	const base = 0x10000
	e := &Entry{
		Source:  "symtab",
		Symbols: []symbol.Symbol{{Name: "f", Addr: base, Size: uint64(16 * n)}},
		Frames:  map[uint64][]symbol.Frame{},
		Covered: []Span{{base, base + uint64(16*n)}},
	}
	for i := range n {
		fr := []symbol.Frame{{Function: "f", File: "/src/f.c", Line: i + 1}}
		if i%3 == 0 {
			fr = append([]symbol.Frame{{Function: "g", File: "/src/g.h", Line: i}}, fr...)
		}
		lo := uint64(base + 16*i)
		e.runs = append(e.runs, Run{Lo: lo, Hi: lo + 8, Frames: uint32(i)})
		e.lists = append(e.lists, fr)
	}
	return e
}

// An entry read answers from its runs without decoding them all: a
// lookup of a few addresses decodes only their frame lists, and reading
// the entry and looking them up costs a bounded number of allocations
// and about its file's size in bytes, not the size of its lists decoded
// (which was most of what libc's entry cost a recording).
func TestLazyLookup(t *testing.T) {
	const n = 20000
	c := openTest(t, Options{})
	want := manyRuns(n)
	if err := c.Put(testKey, want); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(filepath.Join(c.Dir(), testKey))
	if err != nil {
		t.Fatal(err)
	}
	vas := []uint64{0x10000, 0x10000 + 16*777 + 3, 0x10000 + 16*(n-1) + 7, 0x10000 + 16*5 + 8}
	lookup := func() *Entry {
		e, err := c.Get(testKey)
		if err != nil || e == nil {
			t.Fatalf("Get = %v, %v", e, err)
		}
		for _, va := range vas {
			fr, ok := e.FramesAt(va)
			wfr, wok := want.FramesAt(va)
			if ok != wok || !slices.Equal(fr, wfr) {
				t.Fatalf("FramesAt(%#x) = %v, %v; want %v, %v", va, fr, ok, wfr, wok)
			}
		}
		return e
	}
	if e := lookup(); e.lazy == nil {
		t.Error("Get decoded the runs and frame lists of the entry")
	} else if len(e.lazy.memo) != 3 {
		t.Errorf("looking up 4 addresses (3 in runs) decoded %d frame lists, want 3", len(e.lazy.memo))
	}
	if a := testing.AllocsPerRun(5, func() { lookup() }); a > n/100 {
		t.Errorf("Get and 4 lookups in an entry of %d runs: %.0f allocations, want at most %d", n, a, n/100)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	lookup()
	runtime.ReadMemStats(&after)
	got, limit := after.TotalAlloc-before.TotalAlloc, uint64(2*st.Size()+64<<10)
	t.Logf("Get and 4 lookups in an entry of %d runs, %d bytes: %d bytes allocated", n, st.Size(), got)
	if got > limit {
		t.Errorf("Get and 4 lookups in an entry of %d bytes allocated %d bytes, want at most %d", st.Size(), got, limit)
	}
}

// Every address in and around the runs of an entry read answers as in
// the entry written, across the blocks runs are found by, and a list
// looked up twice is one slice.
func TestLazyFramesAt(t *testing.T) {
	for _, n := range []int{1, runBlockLen - 1, runBlockLen, runBlockLen + 1, 5*runBlockLen + 3} {
		want := manyRuns(n)
		e, err := decode(testKey, encode(testKey, want))
		if err != nil {
			t.Fatal(err)
		}
		if e.NumRuns() != n || e.NumFrameLists() != n {
			t.Fatalf("%d runs: read %d runs, %d lists", n, e.NumRuns(), e.NumFrameLists())
		}
		for va := uint64(0x10000 - 2); va < 0x10000+16*uint64(n)+2; va++ {
			fr, ok := e.FramesAt(va)
			wfr, wok := want.FramesAt(va)
			if ok != wok || !slices.Equal(fr, wfr) {
				t.Fatalf("%d runs: FramesAt(%#x) = %v, %v; want %v, %v", n, va, fr, ok, wfr, wok)
			}
		}
		a, _ := e.FramesAt(0x10000)
		b, _ := e.FramesAt(0x10007)
		if &a[0] != &b[0] {
			t.Errorf("%d runs: two addresses of a run got two slices of its list", n)
		}
		// Changed, the entry is decoded whole first.
		e.AddFunctions([]Span{{0x100, 0x110}}, []symbol.FrameRange{{Lo: 0x100, Hi: 0x104, Frames: []symbol.Frame{{Function: "h"}}}})
		if e.lazy != nil || e.NumRuns() != n+1 || e.NumFrameLists() != n+1 {
			t.Errorf("%d runs: after AddFunctions lazy %v, %d runs, %d lists", n, e.lazy != nil, e.NumRuns(), e.NumFrameLists())
		}
		if fr, _ := e.FramesAt(0x10000 + 16*uint64(n-1)); !slices.Equal(fr, want.lists[n-1]) {
			t.Errorf("%d runs: last run after AddFunctions gives %v", n, fr)
		}
	}
}

// manyAddrs returns an entry of n addresses outside any run, 4 bytes
// apart, each with 0 to 2 frames.
func manyAddrs(n int) *Entry {
	e := &Entry{Source: "gopclntab", Frames: map[uint64][]symbol.Frame{}}
	for i := range n {
		var fr []symbol.Frame
		for k := range i % 3 {
			fr = append(fr, symbol.Frame{Function: "f" + string(rune('a'+k)), File: "/src/f.go", Line: i + k})
		}
		if fr == nil {
			fr = []symbol.Frame{}
		}
		e.Frames[uint64(0x400000+4*i)] = fr
	}
	return e
}

// An entry read keeps the frames of its addresses undecoded, and answers
// each address (of every block of them, the first and last included) as
// the entry written, and no address between them.
func TestLazyFrames(t *testing.T) {
	want := manyAddrs(5*addrBlockLen + 3)
	c := openTest(t, Options{})
	if err := c.Put(testKey, want); err != nil {
		t.Fatal(err)
	}
	e := getOK(t, c, testKey)
	if e.lazyFrames == nil || len(e.Frames) != 0 {
		t.Fatalf("Get decoded the frames of the entry's addresses: %d in Frames", len(e.Frames))
	}
	if e.NumAddrs() != len(want.Frames) {
		t.Errorf("NumAddrs = %d, want %d", e.NumAddrs(), len(want.Frames))
	}
	for va, fr := range want.Frames {
		got, ok := e.FramesAt(va)
		if !ok || !slices.Equal(got, fr) || got == nil {
			t.Errorf("FramesAt(%#x) = %v, %v; want %v", va, got, ok, fr)
		}
		for _, near := range []uint64{va - 1, va + 1} {
			if _, ok := e.FramesAt(near); ok {
				t.Errorf("FramesAt(%#x) knows an address the entry does not hold", near)
			}
		}
	}
	if _, ok := e.FramesAt(0); ok {
		t.Error("FramesAt(0) known")
	}
	// Written back whole (a rewrite), the same entry.
	e.materialize()
	e.file, want.file = fileRef{}, fileRef{}
	if !reflect.DeepEqual(e.Frames, want.Frames) {
		t.Error("the entry's frames, decoded whole, differ from those written")
	}
}

// A block of runs found bad by a lookup in an entry Get returned counts
// the entry as corrupt, once, and the entry answers nothing from its
// runs: the caller resolves those addresses from the object itself.
func TestLazyCorruptCounted(t *testing.T) {
	c := openTest(t, Options{})
	e := manyRuns(3 * runBlockLen)
	e.runs[2*runBlockLen+1].Frames = uint32(len(e.lists)) // no such list
	if err := c.writeFile(testKey, encode(testKey, e)); err != nil {
		t.Fatal(err)
	}
	got := getOK(t, c, testKey)
	if fr, ok := got.FramesAt(0x10000); !ok || len(fr) == 0 {
		t.Fatalf("FramesAt in a sound block = %v, %v", fr, ok)
	}
	if n := c.Stats().Corrupt; n != 0 {
		t.Fatalf("%d corrupt before the bad block was reached", n)
	}
	for i := range 3 * runBlockLen {
		got.FramesAt(0x10000 + 16*uint64(i))
	}
	if n := c.Stats().Corrupt; n != 1 {
		t.Errorf("%d corrupt after lookups reached the bad block, want 1", n)
	}
	if fr, ok := got.FramesAt(0x10000); ok {
		t.Errorf("FramesAt in the runs of an entry found bad = %v, want unknown", fr)
	}
}

// The addresses of an entry of version 4 are checked a block at a time
// too: one whose frames are bad answers nothing, counts the entry as
// corrupt once, and leaves the others answering; written back, the
// entry keeps none of them.
func TestLazyFramesCorrupt(t *testing.T) {
	c := openTest(t, Options{})
	e := manyAddrs(3 * addrBlockLen)
	bad := uint64(0x400000 + 4*(2*addrBlockLen+1))
	e.Frames[bad] = []symbol.Frame{{Function: "f", File: "g", Line: maxLine + 1}}
	if err := c.writeFile(testKey, encode(testKey, e)); err != nil {
		t.Fatal(err)
	}
	got := getOK(t, c, testKey)
	if fr, ok := got.FramesAt(0x400000 + 4); !ok || len(fr) != 1 {
		t.Fatalf("FramesAt in a sound block = %v, %v", fr, ok)
	}
	if n := c.Stats().Corrupt; n != 0 {
		t.Fatalf("%d corrupt before the bad block was reached", n)
	}
	if fr, ok := got.FramesAt(bad); ok {
		t.Errorf("FramesAt in the bad block = %v, want unknown", fr)
	}
	got.FramesAt(bad + 4)
	if n := c.Stats().Corrupt; n != 1 {
		t.Errorf("%d corrupt after lookups reached the bad block, want 1", n)
	}
	again, err := decode(testKey, encode(testKey, got))
	if err != nil || again.NumAddrs() != 0 {
		t.Errorf("written back: %v, %d addresses; want none", err, again.NumAddrs())
	}
}
