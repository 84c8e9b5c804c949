package symbol

import (
	"slices"
	"sort"
	"testing"

	"nsprof/internal/testutils"
)

// runFrames returns the frames runs give pc, nil when no run holds it.
func runFrames(runs []FrameRange, pc uint64) []Frame {
	i := sort.Search(len(runs), func(i int) bool { return runs[i].Hi > pc })
	if i < len(runs) && runs[i].Lo <= pc {
		return runs[i].Frames
	}
	return nil
}

// checkFrameRanges compares, at every address of every function of the
// file at path, the frames FrameRanges gives over the function with those
// Frames gives the address, and returns how many functions it answered
// for, of how many, and the deepest frame list of a run.
func checkFrameRanges(t *testing.T, path string) (answered, funcs, deepest int) {
	t.Helper()
	l := &Loader{}
	s, err := l.Load(openFile(t, path), path)
	if err != nil {
		t.Fatal(err)
	}
	// Another load answers Frames, so that FrameRanges reads nothing
	// for it first.
	s2, err := l.Load(openFile(t, path), path)
	if err != nil {
		t.Fatal(err)
	}
	bad := 0
	var starts []uint64
	for _, sym := range s.Table().All() {
		starts = append(starts, sym.Addr)
	}
	s.PrepareDWARF(starts)
	for _, sym := range s.Table().All() {
		funcs++
		s.Frames(sym.Addr) // as a caller resolves a sampled address first
		runs, ok := s.FrameRanges(sym.Addr, sym.Addr+sym.Size, 1<<16)
		if !ok {
			continue
		}
		answered++
		s.ForgetUnits() // read again for the next function, to the same frames
		for i, r := range runs {
			if r.Lo >= r.Hi || r.Lo < sym.Addr || r.Hi > sym.Addr+sym.Size || (i > 0 && r.Lo < runs[i-1].Hi) {
				t.Fatalf("%s: run %d [%#x, %#x) out of order or outside [%#x, %#x)", sym.Name, i, r.Lo, r.Hi, sym.Addr, sym.Addr+sym.Size)
			}
			deepest = max(deepest, len(r.Frames))
		}
		for pc := sym.Addr; pc < sym.Addr+sym.Size; pc++ {
			want, got := s2.Frames(pc), runFrames(runs, pc)
			if !slices.Equal(got, want) {
				if bad++; bad <= 5 {
					t.Errorf("%s+%#x: runs give %v, Frames %v", sym.Name, pc-sym.Addr, got, want)
				}
			}
		}
	}
	if bad > 0 {
		t.Errorf("%s: %d addresses differ", path, bad)
	}
	t.Logf("%s: %d of %d functions answered, deepest %d frames", path, answered, funcs, deepest)
	return answered, funcs, deepest
}

// The runs FrameRanges gives over each function of a Go binary (the
// runtime's included) give every address the frames Frames gives it.
func TestFrameRangesGo(t *testing.T) {
	path := buildGo(t, "goinline", "exe", "")
	answered, _, deepest := checkFrameRanges(t, path)
	if answered < 100 || deepest < 3 {
		t.Errorf("%d functions answered, deepest %d frames: want the runtime's and main.spin's with two inlined calls", answered, deepest)
	}
}

// The same over a C program with inlined calls, from its DWARF.
func TestFrameRangesDWARF(t *testing.T) {
	path := testutils.BuildFixture(t, "inlined", "-O2")
	answered, funcs, deepest := checkFrameRanges(t, path)
	if answered < funcs || deepest < 3 {
		t.Errorf("%d of %d functions answered, deepest %d frames: want all (the C runtime's, without DWARF, too) and inl_outer's chain of two inlined calls", answered, funcs, deepest)
	}
}

// A Loader given the table of a source takes it instead of reading the
// symbols there, and still reads the source lines; a table for another
// source is not taken.
func TestLoaderKnownTable(t *testing.T) {
	path := testutils.BuildFixture(t, "inlined", "-O2")
	l := &Loader{}
	s1, err := l.Load(openFile(t, path), path)
	if err != nil {
		t.Fatal(err)
	}
	fake := NewTable([]Symbol{{Name: "known", Addr: 0x1000, Size: 0x10}})
	for _, src := range []string{s1.Source(), "elsewhere"} {
		asked := false
		l2 := &Loader{Known: func(s string) *Table {
			asked = asked || s == s1.Source()
			if s == src {
				return fake
			}
			return nil
		}}
		s2, err := l2.Load(openFile(t, path), path)
		if err != nil {
			t.Fatal(err)
		}
		if !asked {
			t.Errorf("Known was not asked for %q", s1.Source())
		}
		if took := s2.Table() == fake; took != (src == s1.Source()) {
			t.Errorf("Known gives a table for %q: taken = %v", src, took)
		}
		frames := 0
		for _, sym := range s1.Table().All() {
			for pc := sym.Addr; pc < sym.Addr+sym.Size; pc++ {
				want, got := s1.Frames(pc), s2.Frames(pc)
				if !slices.Equal(got, want) {
					t.Fatalf("%s+%#x: frames %v with a known table, %v without", sym.Name, pc-sym.Addr, got, want)
				}
				frames += len(got)
			}
		}
		if frames == 0 {
			t.Fatal("no frames compared")
		}
	}
}

// ByUnit partitions addresses by compilation unit, keeping their order,
// with those of no unit last.
func TestByUnit(t *testing.T) {
	path := testutils.BuildFixture(t, "inlined", "-O2")
	l := &Loader{}
	s, err := l.Load(openFile(t, path), path)
	if err != nil {
		t.Fatal(err)
	}
	var addrs []uint64
	for _, sym := range s.Table().All() {
		addrs = append(addrs, sym.Addr)
	}
	s.PrepareDWARF(addrs)
	groups := s.ByUnit(addrs)
	var all []uint64
	x := s.lines.index()
	withUnit := 0
	for i, g := range groups {
		if !slices.IsSorted(g) {
			t.Errorf("group %d out of order: %x", i, g)
		}
		all = append(all, g...)
		_, off0, ok0 := x.units.unit(g[0])
		for _, va := range g {
			_, off, ok := x.units.unit(va)
			if ok != ok0 || off != off0 {
				t.Errorf("group %d: %#x in unit %v (%v), %#x in %v (%v)", i, g[0], off0, ok0, va, off, ok)
			}
		}
		if ok0 {
			withUnit++
		} else if i != len(groups)-1 {
			t.Errorf("group %d of addresses of no unit is not the last", i)
		}
	}
	slices.Sort(all)
	if !slices.Equal(all, addrs) {
		t.Errorf("groups hold %x, want %x", all, addrs)
	}
	if withUnit == 0 {
		t.Error("no group of a unit")
	}
}
