package record

import (
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"nsprof/capture"
)

// expandModel is what symProc.expand must leave of the addresses noted in
// one image: every address noted, and the call (a-1) of every return
// address a noted with its call, with its frames wanted; no call flag
// left.
func expandModel(noted map[uint64]userAddr) ([]uint64, []uint8) {
	flags := make(map[uint64]uint8)
	for a, u := range noted {
		f := flags[a]
		if u.line {
			f |= packLine
		}
		flags[a] = f
		if u.call {
			flags[a-1] |= packLine
		}
	}
	addrs := slices.Sorted(func(yield func(uint64) bool) {
		for a := range flags {
			if !yield(a) {
				return
			}
		}
	})
	out := make([]uint8, len(addrs))
	for i, a := range addrs {
		out[i] = flags[a]
	}
	return addrs, out
}

// TestExpandPacked: expanding gives the calls of return addresses
// entries of their own whether the addresses are in the map, packed (a
// process packed at its exit), or both (one sampled again after), calls
// and addresses sampled themselves landing on the same address included.
func TestExpandPacked(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 200 {
		noted := make(map[uint64]userAddr)
		var g symGen
		n := 1 + rng.IntN(60)
		for i := range n {
			// Close addresses, so that calls (a-1) land on
			// addresses noted themselves.
			a := 0x1000 + uint64(rng.IntN(40))
			line, call := rng.IntN(2) == 0, rng.IntN(2) == 0
			g.note(a, int64(i), line, call)
			u := noted[a]
			noted[a] = userAddr{line: u.line || line, call: u.call || call}
			if round%3 != 0 && i == n/2 {
				g.pack() // the rest noted after a pack, as a late sample
			}
		}
		if round%3 == 1 {
			g.pack()
		}
		p := &symProc{symGen: g}
		p.expand()
		wantAddrs, wantFlags := expandModel(noted)
		if p.user != nil || !reflect.DeepEqual(p.packed, wantAddrs) || !reflect.DeepEqual(p.flags, wantFlags) {
			t.Fatalf("round %d: got %x %v (map %v), want %x %v", round, p.packed, p.flags, p.user, wantAddrs, wantFlags)
		}
		// Expanding again changes nothing.
		p.expand()
		if !reflect.DeepEqual(p.packed, wantAddrs) || !reflect.DeepEqual(p.flags, wantFlags) {
			t.Fatalf("round %d, expanded twice: got %x %v, want %x %v", round, p.packed, p.flags, wantAddrs, wantFlags)
		}
	}
}

// TestExpandPackedInPlace: a process whose addresses are packed with no
// call left to expand (one written out at its exit, expanded then, and
// read back for the bundle) is expanded where its addresses lie, without
// rebuilding the map of them and sorting them again: that made a
// tenth of the recorder's CPU over a compile loop.
func TestExpandPackedInPlace(t *testing.T) {
	var g symGen
	for i := range 1000 {
		g.note(0x400000+uint64(7*i), int64(i), i%2 == 0, i%3 == 0)
	}
	p := &symProc{symGen: g}
	p.expand()
	if len(p.packed) == 0 {
		t.Fatal("nothing packed")
	}
	first := &p.packed[0]
	allocs := testing.AllocsPerRun(10, p.expand)
	if &p.packed[0] != first {
		t.Error("expanded again into new slices")
	}
	if allocs > 1 { // the list of images
		t.Errorf("expanding a packed process with no calls: %.0f allocations, want at most 1", allocs)
	}
}

// TestSeenStacksNoAllocs: noting stacks new to the symbolizer whose
// addresses it knows already allocates nothing, however many there are:
// the stacks seen are remembered in fixed slots (seenStackSlots), not in
// a map that grew, and was made anew, as they came.
func TestSeenStacksNoAllocs(t *testing.T) {
	s := newSymbolizer()
	defer s.close()
	const pid, n = 4321, 64
	var addrs []uint64
	for i := range n {
		addrs = append(addrs, 0x400000+uint64(16*i))
	}
	stack := make([]uint64, 4)
	stack[0] = capture.ContextUser
	next := 0
	sampleNext := func() {
		// Stacks of three of the addresses: n^3 distinct ones.
		stack[1], stack[2], stack[3] = addrs[next%n], addrs[next/n%n], addrs[next/n/n%n]
		next++
		s.sampled(pid, stack, false, int64(next))
	}
	for range n * n { // every address noted
		sampleNext()
	}
	// More new stacks than a map of them held before it was made anew.
	const many = 100_000
	if allocs := testing.AllocsPerRun(1, func() {
		for range many {
			sampleNext()
		}
	}); allocs > 0 {
		t.Errorf("%.0f allocations for %d new stacks of known addresses, want none", allocs, many)
	}
	if next > n*n*n {
		t.Fatalf("%d stacks: some repeat", next)
	}
}

// TestPackFlags: packing keeps every address once, in order, with the
// flags it was noted with, also beside an address too large to carry
// them in its word (packed the other way).
func TestPackFlags(t *testing.T) {
	for _, huge := range []bool{false, true} {
		var g symGen
		want := map[uint64]uint8{}
		r := rand.New(rand.NewPCG(3, uint64(len(want))))
		for i := range 2000 {
			a := 0x400000 + r.Uint64N(1<<20)
			if huge && i == 1000 {
				a = 1<<63 + 5
			}
			line, call := r.IntN(2) == 0, r.IntN(3) == 0
			g.note(a, int64(i), line, call)
			f := want[a]
			if line {
				f |= packLine
			}
			if call {
				f |= packCall
			}
			want[a] = f
		}
		g.pack()
		if len(g.packed) != len(want) || !slices.IsSorted(g.packed) {
			t.Fatalf("huge %v: %d addresses, sorted %v; want %d, sorted", huge, len(g.packed), slices.IsSorted(g.packed), len(want))
		}
		for i, a := range g.packed {
			if g.flags[i] != want[a] {
				t.Errorf("huge %v: %#x packed with flags %b, noted with %b", huge, a, g.flags[i], want[a])
			}
		}
	}
}

// BenchmarkPack packs an image's 1500 addresses, a compile loop's
// process's, noted from its stacks.
//
//	go test ./record -run '^$' -bench Pack
func BenchmarkPack(b *testing.B) {
	r := rand.New(rand.NewPCG(5, 6))
	addrs := make([]uint64, 1500)
	for i := range addrs {
		addrs[i] = 0x400000 + r.Uint64N(16<<20)
	}
	for b.Loop() {
		var g symGen
		for i, a := range addrs {
			g.note(a, int64(i), i%4 == 0, i%4 != 0)
		}
		g.pack()
	}
}

// imageStacks returns the stacks of n samples of one image of a compile
// loop's process, shaped as its are: about 1500 distinct addresses, as
// return addresses along paths of some 30 frames down a call tree.
func imageStacks(n int) [][]uint64 {
	r := rand.New(rand.NewPCG(7, 8))
	const nodes = 1500
	addr := make([]uint64, nodes)
	parent := make([]int, nodes)
	for i := range addr {
		addr[i] = 0x400000 + r.Uint64N(16<<20)
		if i > 0 {
			parent[i] = max(0, i-1-r.IntN(100))
		}
	}
	stacks := make([][]uint64, n)
	for k := range stacks {
		var s []uint64
		for i := nodes/2 + r.IntN(nodes/2); ; i = parent[i] {
			s = append(s, addr[i])
			if i == 0 {
				break
			}
		}
		stacks[k] = s
	}
	return stacks
}

// BenchmarkNote notes the stacks of 350 samples of one image, as the
// compile loop's processes have at 4 kHz, and packs them at its exit.
//
//	go test ./record -run '^$' -bench Note
func BenchmarkNote(b *testing.B) {
	stacks := imageStacks(350)
	notes := 0
	for _, s := range stacks {
		notes += len(s)
	}
	for b.Loop() {
		var g symGen
		for i, s := range stacks {
			for j, a := range s {
				g.note(a, int64(i), j == 0, j > 0)
			}
		}
		g.pack()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*notes), "ns/note")
}
