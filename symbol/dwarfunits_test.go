package symbol

import (
	"debug/elf"
	"encoding/binary"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"nsprof/internal/testutils"
)

// sparseAndFull returns two inline indexes over the DWARF of the file at
// path: one reading only the units .debug_aranges names (no fallback to
// the whole DWARF), one over the whole of it.
func sparseAndFull(t *testing.T, path string) (sparse, full *inlineIndex, u *sparseUnits) {
	t.Helper()
	open := func() (*File, error) {
		f, err := Open(path)
		if err != nil {
			return nil, err
		}
		return f, nil
	}
	f := openFile(t, path)
	u, err := f.sparseUnits(open)
	if err != nil || u == nil {
		t.Fatalf("sparseUnits(%s) = %v, %v; want the units of its .debug_aranges", path, u, err)
	}
	d, err := f.dwarf()
	if err != nil {
		t.Fatal(err)
	}
	return newInlineIndex(u, nil, nil), newInlineIndex(newFullUnits(d), nil, nil), u
}

// funcAddrs returns the start and middle of every function of f's symbol
// table.
func funcAddrs(t *testing.T, f *File) []uint64 {
	t.Helper()
	tab, err := f.Symbols()
	if err != nil {
		t.Fatal(err)
	}
	var pcs []uint64
	for _, s := range tab.All() {
		pcs = append(pcs, s.Addr, s.Addr+s.Size/2)
	}
	return pcs
}

// Reading only the units that .debug_aranges names gives, for every
// function of libc and of the dynamic loader (their debug files), the
// same frames as reading the whole DWARF.
func TestSparseUnitsMatchFull(t *testing.T) {
	libc := openHostLibc(t)
	ld := openFile(t, "/lib64/ld-linux-x86-64.so.2")
	for _, obj := range []*File{libc, ld} {
		path := buildIDPath(DefaultDebugDir, obj.BuildID())
		if _, err := os.Stat(path); err != nil {
			t.Fatalf("debug file of build-id %x: %v", obj.BuildID(), err)
		}
		pcs := funcAddrs(t, openFile(t, path))
		if len(pcs) < 100 {
			t.Fatalf("%s: %d function addresses", path, len(pcs))
		}
		sparse, full, u := sparseAndFull(t, path)
		sparse.units.prepare(pcs)
		found, inlined := 0, 0
		for _, pc := range pcs {
			want, got := full.frames(pc), sparse.frames(pc)
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("%s %#x: sparse frames %+v, whole DWARF %+v", path, pc, got, want)
			}
			if len(want) > 0 {
				found++
			}
			if len(want) > 1 {
				inlined++
			}
		}
		if found < len(pcs)/2 || inlined == 0 {
			t.Errorf("%s: %d of %d addresses with frames, %d with inlined calls: too few to compare", path, found, len(pcs), inlined)
		}
		if u.stopped || u.rebuilds != 1 {
			t.Errorf("%s: prepared units read in %d builds (stopped %v), want 1", path, u.rebuilds, u.stopped)
		}
		t.Logf("%s: %d addresses, %d with frames, %d with inlined calls, %d of %d units read", path, len(pcs), found, inlined, len(u.covered), len(u.starts))
	}
}

// A few addresses of libc read only a few of its units: the cost of
// symbolizing a short recording. The sparse read must not inflate all of
// .debug_info when the addresses are in its first part.
func TestSparseUnitsReadLittle(t *testing.T) {
	libc := openHostLibc(t)
	path := buildIDPath(DefaultDebugDir, libc.BuildID())
	tab, err := openFile(t, path).Symbols()
	if err != nil {
		t.Fatal(err)
	}
	var pcs []uint64
	for _, s := range tab.All() {
		if s.Name == "__libc_start_call_main" || s.Name == "qsort" {
			pcs = append(pcs, s.Addr+4)
		}
	}
	if len(pcs) != 2 {
		t.Fatalf("libc start functions at %#x", pcs)
	}
	start := time.Now()
	sparse, _, u := sparseAndFull(t, path)
	sparse.units.prepare(pcs)
	for _, pc := range pcs {
		if fr := sparse.frames(pc); len(fr) == 0 {
			t.Errorf("%#x: no frames", pc)
		}
	}
	if len(u.covered) > 2 || uint64(len(u.info)) > u.infoSize/4 {
		t.Errorf("read %d units and %d of %d bytes of .debug_info for two addresses in its first units", len(u.covered), len(u.info), u.infoSize)
	}
	t.Logf("%d units, %d of %d bytes of .debug_info, in %v (whole DWARF included)", len(u.covered), len(u.info), u.infoSize, time.Since(start))
}

// Units not prepared are read as asked for, each time making the data
// again, until that costs more than the whole DWARF: then the index
// reads the whole of it.
func TestSparseUnitsGiveWay(t *testing.T) {
	libc := openHostLibc(t)
	path := buildIDPath(DefaultDebugDir, libc.BuildID())
	pcs := funcAddrs(t, openFile(t, path))
	sparse, full, u := sparseAndFull(t, path)
	sparse.full = func() dwarfUnits { return full.units }
	units := map[uint64]bool{}
	for _, pc := range pcs {
		want, got := full.frames(pc), sparse.frames(pc)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%#x: frames %+v, whole DWARF %+v", pc, got, want)
		}
		if off, ok := findArange(u.aranges, pc); ok {
			units[off] = true
		}
	}
	if len(units) <= maxRebuilds {
		t.Fatalf("addresses in %d units: not enough to give way", len(units))
	}
	if !u.stopped || sparse.units != full.units || u.rebuilds != maxRebuilds {
		t.Errorf("after %d units asked one by one: stopped %v after %d builds, whole DWARF in use %v", len(units), u.stopped, u.rebuilds, sparse.units == full.units)
	}
}

// A .debug_aranges that names no unit start (here: every set points into
// the middle of a unit) gives no sparse unit; Frames then reads the whole
// DWARF and still answers, prepared or not.
func TestSparseUnitsBadAranges(t *testing.T) {
	bin := testutils.BuildFixture(t, "inlined", "-O2")
	want := map[uint64][]Frame{}
	var pcs []uint64
	good := loadFrames(t, bin)
	for _, s := range funcAddrs(t, openFile(t, bin)) {
		if fr := good.Frames(s); len(fr) > 0 {
			want[s] = fr
			pcs = append(pcs, s)
		}
	}
	if len(pcs) == 0 {
		t.Fatal("no frames in the fixture")
	}
	ef, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	sec := ef.Section(".debug_aranges")
	if sec == nil || sec.Flags&elf.SHF_COMPRESSED != 0 {
		t.Fatalf("fixture's .debug_aranges: %v", sec)
	}
	off, size := sec.Offset, sec.Size
	ef.Close()
	b, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	sets := 0
	for p := off; p+12 <= off+size; sets++ {
		n := uint64(binary.LittleEndian.Uint32(b[p:]))
		binary.LittleEndian.PutUint32(b[p+6:], binary.LittleEndian.Uint32(b[p+6:])+1) // one byte into the unit
		p += 4 + n
	}
	bad := filepath.Join(t.TempDir(), "inlined-bad-aranges")
	if err := os.WriteFile(bad, b, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, prepare := range []bool{false, true} {
		s := loadFrames(t, bad)
		if prepare {
			s.PrepareFrames(pcs)
		}
		for _, pc := range pcs {
			if got := s.Frames(pc); !reflect.DeepEqual(got, want[pc]) {
				t.Fatalf("prepared %v, %#x: frames %+v, want %+v", prepare, pc, got, want[pc])
			}
		}
	}
	t.Logf("%d addresses answered with %d aranges sets made to point into units", len(pcs), sets)
}

// loadFrames loads the symbols (and lines) of the file at path.
func loadFrames(t *testing.T, path string) *Symbols {
	t.Helper()
	l := &Loader{}
	s, err := l.Load(openFile(t, path), path)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// BenchmarkSparseFramesLibc is what a recording's end pays for libc's
// inline frames: open its debug file, read the units of a few functions
// sampled in every profile (one late in .debug_info), and give their
// frames.
func BenchmarkSparseFramesLibc(b *testing.B) {
	libc := openHostLibc(b)
	path := buildIDPath(DefaultDebugDir, libc.BuildID())
	tab, err := openFile(b, path).Symbols()
	if err != nil {
		b.Fatal(err)
	}
	want := map[string]bool{"start_thread": true, "__clone3": true, "__libc_start_call_main": true, "qsort": true, "malloc": true, "__nanosleep": true}
	var pcs []uint64
	for _, s := range tab.All() {
		if want[s.Name] {
			pcs = append(pcs, s.Addr+s.Size/2)
		}
	}
	if len(pcs) < 4 {
		b.Fatalf("found %d of the %d functions in libc's symbols", len(pcs), len(want))
	}
	open := func() (*File, error) { return Open(path) }
	for b.Loop() {
		f, err := Open(path)
		if err != nil {
			b.Fatal(err)
		}
		u, err := f.sparseUnits(open)
		if err != nil || u == nil {
			b.Fatalf("sparseUnits: %v, %v", u, err)
		}
		x := newInlineIndex(u, nil, nil)
		x.units.prepare(pcs)
		for _, pc := range pcs {
			if len(x.frames(pc)) == 0 {
				b.Fatalf("%#x: no frames", pc)
			}
		}
		f.Close()
	}
}
