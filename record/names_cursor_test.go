package record

import (
	"math/rand/v2"
	"slices"
	"testing"

	"nsprof/capture"
)

// TestObjCursorFind: the cursor finds each offset as a binary search does,
// whatever order they are asked in (sorted runs, as a mapping's addresses
// come, restarting for each process, and at random).
func TestObjCursorFind(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{0, 1, 2, 3, 7, 100, 5000} {
		offs := make([]uint64, 0, n)
		for v := uint64(0); len(offs) < n; v += 1 + uint64(rng.IntN(40)) {
			offs = append(offs, v)
		}
		c := newObjCursor(&objNames{offs: offs, vas: make([]uint64, n), fn: make([]int32, n)}, nil)
		check := func(off uint64) {
			t.Helper()
			want, wantOK := slices.BinarySearch(offs, off)
			got, ok := c.find(off)
			if ok != wantOK || (ok && got != want) {
				t.Fatalf("%d offsets: find(%d) = %d, %v; want %d, %v", n, off, got, ok, want, wantOK)
			}
		}
		top := uint64(40*n + 50)
		for range 20 {
			// A process: sorted addresses, some sampled, some not.
			var run []uint64
			for range rng.IntN(200) {
				run = append(run, uint64(rng.IntN(int(top))))
			}
			slices.Sort(run)
			for _, off := range run {
				check(off)
			}
		}
		for range 1000 {
			check(uint64(rng.IntN(int(top))))
		}
		for i, off := range offs {
			check(off)
			if fr := c.framesAt(i); fr != nil {
				t.Fatalf("an object without frames: framesAt(%d) = %v", i, fr)
			}
		}
	}
	// With frames, by link-time address: each offset gets its own.
	fr := map[uint64][]capture.SourceFrame{0x1010: {{Function: "f"}}, 0x1020: {{Function: "g"}}}
	c := newObjCursor(&objNames{offs: []uint64{0x10, 0x20, 0x30}, vas: []uint64{0x1010, 0x1020, 0x1030}, fn: []int32{0, 0, -1}}, fr)
	for i, want := range []string{"f", "g", ""} {
		got := ""
		if f := c.framesAt(i); len(f) > 0 {
			got = f[0].Function
		}
		if got != want {
			t.Errorf("framesAt(%d) = %q, want %q", i, got, want)
		}
	}
}

// TestNamedBegins: namedBegins says a function is new exactly when a set
// of those named so far would, for sequences in order (one image), with
// repeats in a row, and out of order (several images, JIT code), and
// forgets them at reset.
func TestNamedBegins(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	var n namedBegins
	for round := range 200 {
		n.reset()
		seen := make(map[uint64]bool)
		var seq []uint64
		for range rng.IntN(300) {
			seq = append(seq, uint64(rng.IntN(500)))
		}
		if round%2 == 0 {
			slices.Sort(seq) // one image: in order, repeats in a row
		} else if len(seq) > 10 {
			slices.Sort(seq[:len(seq)/2]) // in order, then not
		}
		for i, b := range seq {
			want := !seen[b]
			seen[b] = true
			if got := n.add(b); got != want {
				t.Fatalf("round %d, begin %d (#%d of %v): add = %v, want %v", round, b, i, seq, got, want)
			}
		}
	}
}
