package symcache

import (
	"fmt"
	"slices"
	"testing"

	"nsprof/symbol"
)

// frame returns a one-frame list naming f.
func frame(f string) []symbol.Frame { return []symbol.Frame{{Function: f, File: "/src/d.go", Line: 1}} }

// TestDeltasReadLazily: the frames of an entry's deltas are decoded as
// they are looked up, not as the entry is read (Frames stays empty), an
// address of several deltas has the earliest one's frames, NumAddrs
// counts each address once, and the entry made eager holds them all.
func TestDeltasReadLazily(t *testing.T) {
	const a, b, c, d = 0x900000, 0x900010, 0x900020, 0x900030
	file := withDeltas(encode(testKey, manyAddrs(100)),
		map[uint64][]symbol.Frame{a: frame("a1"), b: frame("b1")},
		map[uint64][]symbol.Frame{b: frame("b2"), c: frame("c2")},
		map[uint64][]symbol.Frame{a: frame("a3"), d: {}, 0x400000: frame("over the payload")},
	)
	e, err := decode(testKey, file)
	if err != nil {
		t.Fatal(err)
	}
	if len(e.Frames) != 0 {
		t.Errorf("%d addresses of the deltas decoded as the entry was read", len(e.Frames))
	}
	want := map[uint64][]symbol.Frame{a: frame("a1"), b: frame("b1"), c: frame("c2"), d: {}, 0x400000: frame("over the payload")}
	for va, fr := range want {
		if got, ok := e.FramesAt(va); !ok || !slices.Equal(got, fr) {
			t.Errorf("FramesAt(%#x) = %v, %v; want %v", va, got, ok, fr)
		}
	}
	if _, ok := e.FramesAt(b + 1); ok {
		t.Errorf("FramesAt(%#x) knows an address no delta holds", b+1)
	}
	if n := e.NumAddrs(); n != 100+5 {
		t.Errorf("NumAddrs = %d, want 105 (the payload's 100 and the deltas' 5, one of them the payload's too)", n)
	}
	e.materialize()
	for va, fr := range want {
		if got := e.Frames[va]; !slices.Equal(got, fr) {
			t.Errorf("made eager: Frames[%#x] = %v, want %v", va, got, fr)
		}
	}
	if len(e.Frames) != 100+4 {
		t.Errorf("made eager: %d addresses, want 104", len(e.Frames))
	}
}

// BenchmarkGetDeltas reads an entry of 72 k addresses with 13 deltas of
// 2,000 each, as the Go compiler's over a compile loop, and looks up
// 1,000 of the deltas' addresses.
func BenchmarkGetDeltas(b *testing.B) {
	var deltas []map[uint64][]symbol.Frame
	var look []uint64
	for k := range 13 {
		d := make(map[uint64][]symbol.Frame)
		for i := range 2000 {
			va := uint64(0x800000 + 8*(i*13+k))
			d[va] = []symbol.Frame{{Function: fmt.Sprintf("pkg.f%d", i%500), File: "/src/pkg/f.go", Line: i}, {Function: "pkg.caller", File: "/src/pkg/g.go", Line: k}}
			if i%26 == 0 {
				look = append(look, va)
			}
		}
		deltas = append(deltas, d)
	}
	file := withDeltas(encode(testKey, manyAddrs(72000)), deltas...)
	b.SetBytes(int64(len(file)))
	b.ReportAllocs()
	for b.Loop() {
		e, err := decode(testKey, file)
		if err != nil {
			b.Fatal(err)
		}
		for _, va := range look {
			if _, ok := e.FramesAt(va); !ok {
				b.Fatalf("no frames at %#x", va)
			}
		}
	}
}

// TestIndexDeltasEarliest: over many deltas (an odd number, so that a
// run goes unpaired in a round of merging) sharing addresses, the index
// holds each address once, sorted, with the earliest delta holding it.
func TestIndexDeltasEarliest(t *testing.T) {
	for _, ndeltas := range []int{1, 2, 3, 7, 33} {
		var zs []*lazyFrames
		first := map[uint64]uint32{}
		for i := range ndeltas {
			var vas []uint64
			for k := range 50 {
				// Steps of 1..3 words from a start of its own: every
				// delta shares addresses with others.
				va := uint64(0x1000 + 8*(i%5) + 8*k*(1+i%3))
				vas = append(vas, va)
				if _, ok := first[va]; !ok {
					first[va] = uint32(i)
				}
			}
			zs = append(zs, &lazyFrames{vas: vas})
		}
		x := indexDeltas(zs)
		if len(x.vas) != len(first) || len(x.in) != len(first) {
			t.Fatalf("%d deltas: %d addresses (%d indexes), want %d", ndeltas, len(x.vas), len(x.in), len(first))
		}
		for k, va := range x.vas {
			if k > 0 && x.vas[k-1] >= va {
				t.Fatalf("%d deltas: address %d (%#x) not above the one before (%#x)", ndeltas, k, va, x.vas[k-1])
			}
			if x.in[k] != first[va] {
				t.Errorf("%d deltas: %#x is delta %d's, want %d's (the earliest holding it)", ndeltas, va, x.in[k], first[va])
			}
		}
	}
}

// TestFrameArenaGrows: an arena's first chunk is small (an entry's
// payload and each of its deltas has one, and most see a few lookups),
// its chunks double up to arenaChunk, and the slices it hands out do
// not overlap.
func TestFrameArenaGrows(t *testing.T) {
	var a frameArena
	first := a.alloc(3)
	if cap(a.buf) != firstArenaChunk {
		t.Fatalf("first chunk of %d frames, want %d", cap(a.buf), firstArenaChunk)
	}
	first = append(first, frame("a")...)
	var all [][]symbol.Frame
	for i := range 10_000 {
		fr := append(a.alloc(2), symbol.Frame{Function: fmt.Sprint(i)}, symbol.Frame{Line: i})
		all = append(all, fr)
		if cap(a.buf) > arenaChunk {
			t.Fatalf("a chunk of %d frames, more than %d", cap(a.buf), arenaChunk)
		}
	}
	if cap(a.buf) != arenaChunk {
		t.Errorf("after 20 000 frames the chunks hold %d, want %d", cap(a.buf), arenaChunk)
	}
	for i, fr := range all {
		if fr[0].Function != fmt.Sprint(i) || fr[1].Line != i {
			t.Fatalf("slice %d overwritten: %+v", i, fr)
		}
	}
	if first[0].Function != "a" {
		t.Errorf("the first slice overwritten: %+v", first)
	}
}

// TestSortedFrames: the frames an entry is written with, merged in
// address order, are allFrames's: those added since it was read first,
// then the deltas' from the first, then the payload's.
func TestSortedFrames(t *testing.T) {
	const a, b, c = 0x900000, 0x900010, 0x900020
	payload := manyAddrs(100)
	var first uint64
	for va := range payload.Frames {
		first = va
		break
	}
	e, err := decode(testKey, withDeltas(encode(testKey, payload),
		map[uint64][]symbol.Frame{a: frame("a1"), first: frame("over the payload")},
		map[uint64][]symbol.Frame{a: frame("a2"), b: frame("b2")},
		map[uint64][]symbol.Frame{b: frame("b3"), c: frame("c3")},
	))
	if err != nil {
		t.Fatal(err)
	}
	e.Frames[c] = frame("c added")
	want := e.allFrames()
	got := e.sortedFrames()
	if len(got) != len(want) {
		t.Fatalf("%d addresses, allFrames has %d", len(got), len(want))
	}
	for i, x := range got {
		if i > 0 && got[i-1].va >= x.va {
			t.Fatalf("address %d (%#x) not above the one before (%#x)", i, x.va, got[i-1].va)
		}
		if !slices.Equal(x.fr, want[x.va]) {
			t.Errorf("%#x: %v, allFrames %v", x.va, x.fr, want[x.va])
		}
	}
	for va, name := range map[uint64]string{a: "a1", b: "b2", c: "c added", first: "over the payload"} {
		if fr := want[va]; len(fr) != 1 || fr[0].Function != name {
			t.Errorf("%#x: %v, want %s's", va, fr, name)
		}
	}
}

// TestFramesAtAnyOrder: lookups answer alike in any order. The bundle
// looks addresses up in increasing order, and the payload's blocks and
// the deltas' addresses are searched from where the last lookup ended
// (galloping forward); lookups going back, repeating, jumping far ahead
// or falling between addresses must not be misled by that. Every block
// is reached first by a lookup, which checks it and finds its address in
// one pass.
func TestFramesAtAnyOrder(t *testing.T) {
	const n = 40*addrBlockLen + 5
	payload := manyAddrs(n)
	d1 := map[uint64][]symbol.Frame{0x400000 + 4*7: frame("d1 over the payload"), 0x400001: frame("d1 between")}
	d2 := map[uint64][]symbol.Frame{0x400001: frame("d2 between"), 0x400000 + 4*n: frame("d2 past the payload")}
	for i := range 300 {
		d2[uint64(0x500000+16*i)] = frame(fmt.Sprint("d2 ", i))
	}
	want := func(va uint64) ([]symbol.Frame, bool) {
		for _, m := range []map[uint64][]symbol.Frame{d1, d2, payload.Frames} {
			if fr, ok := m[va]; ok {
				return fr, true
			}
		}
		return nil, false
	}
	var up []uint64
	for va := uint64(0x400000 - 3); va < 0x400000+4*n+3; va++ {
		up = append(up, va)
	}
	for i := range 300 {
		up = append(up, uint64(0x500000+16*i), uint64(0x500000+16*i+1))
	}
	down := slices.Clone(up)
	slices.Reverse(down)
	shuffled := slices.Clone(up)
	for i := range shuffled {
		j := (i * 7919) % len(shuffled)
		shuffled[i], shuffled[j] = shuffled[j], shuffled[i]
	}
	jumps := []uint64{0x500000 + 16*299, 0x400000, 0x500000, 0x400000 + 4*(n-1), 0x400000 + 4*(n-1), 0x400001, 0x400004}
	for _, order := range []struct {
		name string
		vas  []uint64
	}{{"increasing", up}, {"decreasing", down}, {"shuffled", shuffled}, {"jumping", jumps}} {
		e, err := decode(testKey, withDeltas(encode(testKey, payload), d1, d2))
		if err != nil {
			t.Fatal(err)
		}
		for _, va := range order.vas {
			fr, ok := e.FramesAt(va)
			wfr, wok := want(va)
			if ok != wok || !slices.Equal(fr, wfr) {
				t.Fatalf("%s: FramesAt(%#x) = %v, %v; want %v, %v", order.name, va, fr, ok, wfr, wok)
			}
		}
	}
}

// TestGallop: the range gallop gives holds the first index past i at
// which a monotone predicate holds, for every i and every such index.
func TestGallop(t *testing.T) {
	for n := 1; n < 40; n++ {
		for first := 0; first <= n; first++ {
			for i := 0; i < min(first, n); i++ {
				lo, hi := gallop(n, i, func(k int) bool { return k >= first })
				if lo > first || first > hi || hi > n || lo <= i {
					t.Fatalf("n %d, from %d, first %d: range [%d, %d)", n, i, first, lo, hi)
				}
				if first < n && first >= hi {
					t.Fatalf("n %d, from %d, first %d: range [%d, %d) misses it", n, i, first, lo, hi)
				}
			}
		}
	}
}
