package record

import (
	"errors"
	"fmt"
	"reflect"
	"runtime"
	"slices"
	"testing"

	"nsprof/capture"
	"nsprof/container"
)

// bundleNoKernel bundles s without kernel symbols, logging to t.
func bundleNoKernel(t *testing.T, s *symbolizer) ([]capture.Symbol, []capture.AddrLines) {
	t.Helper()
	return bundleAll(s, func() (kernelTable, error) { return nil, errors.New("none") }, func(int) int { return 0 }, nil, func(f string, a ...any) { t.Logf(f, a...) })
}

// byProcess groups bundle records by pid, with their addresses made
// relative to base (the file's mapping in that process).
func byProcess(syms []capture.Symbol, bases map[int]uint64) map[int][]capture.Symbol {
	out := map[int][]capture.Symbol{}
	for _, s := range syms {
		b := bases[int(s.PID)]
		s.Begin -= b
		s.End -= b
		pid := int(s.PID)
		s.PID = 0
		out[pid] = append(out[pid], s)
	}
	return out
}

// TestBundleReleasesTables: once an object's sampled addresses are named,
// its symbol table is let go (the bundle of a recording over many large
// binaries held them all until every process was named), while every
// process mapping it is named as the first one is.
func TestBundleReleasesTables(t *testing.T) {
	s, _, bases := imageInThreeProcesses(t)
	defer s.close()
	syms, lines := bundleNoKernel(t, s)
	if len(lines) == 0 {
		t.Error("no source lines bundled")
	}
	for _, o := range s.objs {
		if o.syms != nil || o.elf != nil || o.loaded {
			t.Errorf("%s: tables still held after the bundle (loaded %v)", o.path, o.loaded)
		}
	}
	got := byProcess(syms, bases)
	if len(got[10]) < 3 {
		t.Fatalf("process 10: %d symbols; want leaf_fn, mid_fn and main at least", len(got[10]))
	}
	for pid := range bases {
		if !reflect.DeepEqual(got[pid], got[10]) {
			t.Errorf("process %d named %v; want as process 10: %v", pid, got[pid], got[10])
		}
	}
}

// TestBundleSplitNamesNextCapture: in a split recording, the next
// capture's processes mapping an object the last capture named (and let
// go of, or kept) are named as they were, the object read again where
// its tables went.
func TestBundleSplitNamesNextCapture(t *testing.T) {
	path, id, offs := cachedImage(t)
	s := newSymbolizer()
	s.carry = true
	s.open = func(int) (*container.Process, error) { return nil, errors.New("no such process") }
	defer s.close()
	bases := map[int]uint64{10: 0x400000, 11: 0x7f0000000000, 12: 0x500000}
	sample := func(pid int) {
		for _, off := range offs {
			s.sampled(pid, []uint64{capture.ContextUser, bases[pid] + off}, false, 10)
		}
	}
	for _, pid := range []int{10, 11} {
		s.mapped(pid, container.Mapping{Path: path, Start: bases[pid], End: bases[pid] + 1<<20, BuildID: id})
		sample(pid)
	}
	first, lines := bundleNoKernel(t, s)
	want := byProcess(first, bases)[10]
	if len(want) < 3 {
		t.Fatalf("first capture: %d symbols for process 10", len(want))
	}

	// The cut: process 11 is gone, 10 lives on and a new one, 12, maps
	// the same file.
	s.nextCapture(func(pid int) bool { return pid == 10 }, false)
	s.mapped(12, container.Mapping{Path: path, Start: bases[12], End: bases[12] + 1<<20, BuildID: id})
	sample(10)
	sample(12)
	second, lines2 := bundleNoKernel(t, s)
	got := byProcess(second, bases)
	if len(got) != 2 {
		t.Errorf("second capture names processes %v; want 10 and 12", got)
	}
	for _, pid := range []int{10, 12} {
		if !reflect.DeepEqual(got[pid], want) {
			t.Errorf("second capture, process %d named %v; want %v", pid, got[pid], want)
		}
	}
	if !reflect.DeepEqual(lines2, lines) {
		t.Errorf("second capture's source lines differ: %d; want %d", len(lines2), len(lines))
	}
}

// TestResolveObjectsRepeatedOffsets: an object's file offsets come once
// for every process that sampled them; resolving them costs what resolving
// them once does (it sized its map of frames by the repeats: 8 MB at the
// peak of a recording over a compile loop).
func TestResolveObjectsRepeatedOffsets(t *testing.T) {
	path, id, offs := cachedImage(t)
	const procs = 1000
	allocs := func(repeats int) uint64 {
		s := newSymbolizer()
		s.open = func(int) (*container.Process, error) { return nil, errors.New("no such process") }
		defer s.close()
		s.mapped(1, container.Mapping{Path: path, Start: 0x400000, End: 0x400000 + 1<<20, BuildID: id})
		o := s.procs[1].maps[0].obj
		h := &objHits{}
		for range repeats {
			for _, off := range offs {
				h.add(off, true)
			}
		}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		frames, names := s.resolveObjects([]*symObj{o}, map[*symObj]*objHits{o: h}, nil, func(f string, a ...any) { t.Logf(f, a...) })
		runtime.ReadMemStats(&after)
		if len(frames[o]) == 0 || names[o] == nil || len(names[o].offs) != len(offs) {
			t.Fatalf("%d repeats: %d frames, names %v", repeats, len(frames[o]), names[o])
		}
		if n := names[o].offs; cap(n) != len(n) {
			t.Errorf("%d repeats: the names keep room for %d offsets, for %d", repeats, cap(n), len(n))
		}
		return after.TotalAlloc - before.TotalAlloc
	}
	once := allocs(1)
	repeated := allocs(procs)
	if repeated > 2*once+64<<10 {
		t.Errorf("resolving %d offsets, each given %d times, allocated %d bytes; %d given once", len(offs), procs, repeated, once)
	}
}

// TestObjHitsOnce: the offsets noted for an object, given once for every
// process that sampled them, are held once each (in at most four slots
// each, the set's room to grow), and come out once each, sorted, those
// whose frames any process wanted with them; offset 0 (the set's empty
// slot) among them.
func TestObjHitsOnce(t *testing.T) {
	var h objHits
	const distinctOffs, procs = 3000, 1000
	for p := range procs {
		for i := range distinctOffs {
			k := (i*7919 + p) % distinctOffs
			h.add(uint64(k)*16, k%3 == 0 && p%2 == 0)
		}
	}
	if len(h.slots) > 4*distinctOffs {
		t.Errorf("%d slots for %d distinct offsets", len(h.slots), distinctOffs)
	}
	all, lines := h.offsets()
	if len(all) != distinctOffs || !slices.IsSorted(all) {
		t.Errorf("%d offsets, sorted %v; want %d, sorted", len(all), slices.IsSorted(all), distinctOffs)
	}
	if len(lines) != distinctOffs/3 || !slices.IsSorted(lines) {
		t.Errorf("%d offsets with lines, sorted %v; want %d, sorted", len(lines), slices.IsSorted(lines), distinctOffs/3)
	}
	for _, off := range lines {
		if off/16%3 != 0 {
			t.Errorf("offset %#x with lines; no process wanted its frames", off)
		}
	}
}

// TestDescribedLines: the lines the cursors described come by build-id,
// then offset, once each, also when two objects of one build-id (one
// file reached by two paths) described some of the same offsets.
func TestDescribedLines(t *testing.T) {
	cursor := func(id string, offs []uint64, described ...bool) *objCursor {
		c := &objCursor{n: &objNames{offs: offs}, described: described, id: id}
		for _, off := range offs {
			c.frames = append(c.frames, []capture.SourceFrame{{Function: fmt.Sprintf("%s@%d", id, off)}})
		}
		return c
	}
	for _, twice := range []bool{false, true} {
		cursors := map[*symObj]*objCursor{
			{}: cursor("bb", []uint64{2, 3}, true, true),
			{}: cursor("aa", []uint64{1, 5, 9}, true, false, true),
			{}: cursor("", []uint64{4}, false),
		}
		want := []string{"aa@1", "aa@9", "bb@2", "bb@3"}
		if twice {
			cursors[&symObj{}] = cursor("aa", []uint64{5, 9, 12}, true, true, true)
			want = []string{"aa@1", "aa@5", "aa@9", "aa@12", "bb@2", "bb@3"}
		}
		var got []string
		for _, l := range describedLines([]capture.AddrLines{{PID: 7}}, cursors)[1:] {
			if name := fmt.Sprintf("%s@%d", l.Object, l.Addr); len(l.Frames) != 1 || l.Frames[0].Function != name {
				t.Errorf("%s has frames %v", name, l.Frames)
			}
			got = append(got, fmt.Sprintf("%s@%d", l.Object, l.Addr))
		}
		if !slices.Equal(got, want) {
			t.Errorf("two objects of one build-id %v: lines %v; want %v", twice, got, want)
		}
	}
}
