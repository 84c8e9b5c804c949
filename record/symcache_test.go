package record

import (
	"debug/elf"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
	"time"

	"nsprof/capture"
	"nsprof/container"
	"nsprof/internal/testutils"
	"nsprof/symbol"
	"nsprof/symcache"
)

// cachedImage builds a C program with DWARF and an inlined call, and
// returns its path, build-id and the file offsets of its functions.
func cachedImage(t *testing.T) (path string, id []byte, offs []uint64) {
	t.Helper()
	src := filepath.Join(t.TempDir(), "cached.c")
	code := `static inline __attribute__((always_inline)) int twice(int x) { return x * 2 + (x >> 3); }
__attribute__((noinline)) int leaf_fn(int x) { for (int i = 0; i < x; i++) x ^= twice(i); return x; }
__attribute__((noinline)) int mid_fn(int x) { return leaf_fn(x) + twice(x); }
int main(int c, char **v) { return mid_fn(c); }
`
	if err := os.WriteFile(src, []byte(code), 0o644); err != nil {
		t.Fatal(err)
	}
	path = testutils.BuildC(t, src, "-g", "-O1", "-Wl,--build-id")
	ef, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer ef.Close()
	syms, err := ef.Symbols()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range syms {
		if s.Name != "leaf_fn" && s.Name != "mid_fn" && s.Name != "main" {
			continue
		}
		for _, p := range ef.Progs {
			if p.Type == elf.PT_LOAD && s.Value >= p.Vaddr && s.Value < p.Vaddr+p.Memsz {
				for d := uint64(0); d < s.Size; d += 3 {
					offs = append(offs, s.Value-p.Vaddr+p.Off+d)
				}
			}
		}
	}
	if len(offs) < 6 {
		t.Fatalf("%s: %d offsets in its functions", path, len(offs))
	}
	f, err := symbol.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if len(f.BuildID()) == 0 {
		t.Fatalf("%s: no build-id", path)
	}
	return path, f.BuildID(), offs
}

// TestSymbolCacheSecondBundle bundles the same samples of one file
// without a cache, then twice with one: the first fills the cache, the
// second reads everything from it, and all three give the same symbols and
// source lines. Addresses new to the entry are added to it.
func TestSymbolCacheSecondBundle(t *testing.T) {
	path, id, offs := cachedImage(t)
	run := func(c *symcache.Cache, offs []uint64) ([]capture.Symbol, []capture.AddrLines, [3]int) {
		return cachedBundle(t, c, path, id, 1<<20, offs)
	}
	first := offs[:len(offs)/2]
	wantSyms, wantLines, _ := run(nil, first)
	if len(wantSyms) == 0 || len(wantLines) == 0 {
		t.Fatalf("no cache: %d symbols, %d lines", len(wantSyms), len(wantLines))
	}
	inlined := false
	for _, l := range wantLines {
		inlined = inlined || len(l.Frames) > 1
	}
	if !inlined {
		t.Fatal("no inline frames among the lines: the test does not check them")
	}

	c, err := symcache.Open(filepath.Join(t.TempDir(), "symbols"), symcache.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for i, want := range [][3]int{{cacheNone: 1}, {cacheAll: 1}} {
		syms, lines, uses := run(c, first)
		if uses != want {
			t.Errorf("bundle %d with the cache: uses %v, want %v", i+1, uses, want)
		}
		if !reflect.DeepEqual(syms, wantSyms) {
			t.Errorf("bundle %d with the cache: symbols\n%v\nwant\n%v", i+1, syms, wantSyms)
		}
		if !reflect.DeepEqual(lines, wantLines) {
			t.Errorf("bundle %d with the cache: lines\n%v\nwant\n%v", i+1, lines, wantLines)
		}
	}
	if st := c.Stats(); st.Hits != 1 || st.Written != 1 {
		t.Errorf("cache stats %+v, want 1 hit and 1 write", st)
	}

	// Addresses the entry lacks: the file is read for them, and they join
	// the entry, so that a third bundle needs the file no more.
	wantSyms, wantLines, _ = run(nil, offs)
	for i, want := range [][3]int{{cachePart: 1}, {cacheAll: 1}} {
		syms, lines, uses := run(c, offs)
		if uses != want {
			t.Errorf("bundle %d of more addresses: uses %v, want %v", i+1, uses, want)
		}
		if !reflect.DeepEqual(syms, wantSyms) || !reflect.DeepEqual(lines, wantLines) {
			t.Errorf("bundle %d of more addresses differs from one without the cache", i+1)
		}
	}
}

// A corrupt entry is ignored, counted, and replaced.
func TestSymbolCacheCorruptEntry(t *testing.T) {
	path, id, offs := cachedImage(t)
	const pid, base = 42, 0x7f0000000000
	dir := filepath.Join(t.TempDir(), "symbols")
	c, err := symcache.Open(dir, symcache.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	key := symcache.Key(id, nil)
	if err := os.WriteFile(filepath.Join(dir, key), []byte("nsprofSC garbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	var logged []string
	s := newSymbolizer()
	s.open = func(int) (*container.Process, error) { return nil, errors.New("no such process") }
	s.cache = c
	defer s.close()
	s.mapped(pid, container.Mapping{Path: path, Start: base, End: base + 1<<20, BuildID: id})
	s.sampled(pid, []uint64{capture.ContextUser, base + offs[0]}, false, 10)
	syms, _ := bundleAll(s, func() (kernelTable, error) { return nil, errors.New("none") }, func(int) int { return 0 }, nil, func(f string, a ...any) { logged = append(logged, f) })
	if len(syms) == 0 {
		t.Fatal("a corrupt cache entry left the address unnamed")
	}
	if st := c.Stats(); st.Corrupt != 1 || st.Written != 1 {
		t.Errorf("cache stats %+v, want the corrupt entry counted and replaced", st)
	}
	if e, err := c.Get(key); e == nil || err != nil {
		t.Errorf("entry after the bundle: %v, %v", e, err)
	}
	if len(logged) == 0 {
		t.Error("the corrupt entry was not logged")
	}
}

// A file without source lines (debug information stripped) needs reading
// once: addresses new to its entry have no frames either, and are named
// from the entry's table.
func TestSymbolCacheNoLines(t *testing.T) {
	path, id, offs := cachedImage(t)
	stripped := filepath.Join(t.TempDir(), "stripped")
	objcopy := testutils.LookPathOrSkip(t, "objcopy")
	if out, err := exec.Command(objcopy, "--strip-debug", path, stripped).CombinedOutput(); err != nil {
		t.Fatalf("objcopy: %v: %s", err, out)
	}
	run := func(c *symcache.Cache, offs []uint64) ([]capture.Symbol, []capture.AddrLines, [3]int) {
		return cachedBundle(t, c, stripped, id, 1<<20, offs)
	}
	c, err := symcache.Open(filepath.Join(t.TempDir(), "symbols"), symcache.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, _, uses := run(c, offs[:2]); uses != [3]int{cacheNone: 1} {
		t.Fatalf("first bundle: uses %v", uses)
	}
	wantSyms, wantLines, _ := run(nil, offs)
	syms, lines, uses := run(c, offs)
	if uses != [3]int{cacheAll: 1} {
		t.Errorf("bundle of new addresses: uses %v, want all from the cache", uses)
	}
	if len(wantSyms) == 0 || !reflect.DeepEqual(syms, wantSyms) || !reflect.DeepEqual(lines, wantLines) {
		t.Errorf("bundle from the cache differs from one without it:\n%v %v\nwant\n%v %v", syms, lines, wantSyms, wantLines)
	}
}

// A file another user could have written (which could forge a library's
// build-id) is symbolized but not cached, nor handed to the filler:
// neither one owned by another user nor one writable by others.
func TestSymbolCacheUntrustedFile(t *testing.T) {
	path, id, offs := cachedImage(t)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	const pid, base = 42, 0x7f0000000000
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, p string)
	}{
		{"world-writable", func(t *testing.T, p string) {
			if err := os.Chmod(p, 0o777); err != nil {
				t.Fatal(err)
			}
		}},
		{"other owner", func(t *testing.T, p string) {
			if os.Geteuid() != 0 {
				testutils.RequireCI(t, "needs root to give a file away")
			}
			if err := os.Chown(p, 65534, 65534); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "copy")
			if err := os.WriteFile(p, b, 0o755); err != nil {
				t.Fatal(err)
			}
			tc.setup(t, p)
			c, err := symcache.Open(filepath.Join(t.TempDir(), "symbols"), symcache.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			s := newSymbolizer()
			s.open = func(int) (*container.Process, error) { return nil, errors.New("no such process") }
			s.cache = c
			defer s.close()
			s.mapped(pid, container.Mapping{Path: p, Start: base, End: base + 1<<20, BuildID: id})
			s.sampled(pid, []uint64{capture.ContextUser, base + offs[0]}, false, 10)
			syms, _ := bundleAll(s, func() (kernelTable, error) { return nil, errors.New("none") }, func(int) int { return 0 }, nil, func(string, ...any) {})
			if len(syms) == 0 {
				t.Fatal("address not named")
			}
			if st := c.Stats(); st.Written != 0 || s.cacheUntrusted != 1 {
				t.Errorf("cache stats %+v, %d untrusted: want nothing written, 1 untrusted", st, s.cacheUntrusted)
			}
			if len(s.fills) != 0 {
				t.Errorf("%d untrusted files handed over to fill the cache", len(s.fills))
			}
		})
	}
}

// TestBundleDropsLineTables: once an object's source frames are resolved,
// its line tables are let go (only the symbol table stays, for naming),
// and resolving it again reads them anew, with the same frames.
func TestBundleDropsLineTables(t *testing.T) {
	path, id, offs := cachedImage(t)
	const pid, base = 4242, 0x400000
	s := newSymbolizer()
	s.open = func(int) (*container.Process, error) { return nil, errors.New("no such process") }
	defer s.close()
	s.mapped(pid, container.Mapping{Path: path, Start: base, End: base + 1<<20, BuildID: id})
	for _, off := range offs {
		s.sampled(pid, []uint64{capture.ContextUser, base + off}, false, 10)
	}
	syms, lines := bundleAll(s, func() (kernelTable, error) { return nil, errors.New("none") }, func(int) int { return 0 }, nil, func(f string, a ...any) { t.Logf(f, a...) })
	if len(syms) == 0 || len(lines) == 0 {
		t.Fatalf("%d symbols, %d lines", len(syms), len(lines))
	}
	for _, o := range s.objs {
		if o.syms != nil && o.syms.HasLines() {
			t.Errorf("%s: line tables still held after the bundle", o.path)
		}
	}
	again, lines2 := bundleAll(s, func() (kernelTable, error) { return nil, errors.New("none") }, func(int) int { return 0 }, nil, func(f string, a ...any) { t.Logf(f, a...) })
	if !reflect.DeepEqual(again, syms) || !reflect.DeepEqual(lines2, lines) {
		t.Errorf("a second bundle differs: %d symbols, %d lines; want %d, %d", len(again), len(lines2), len(syms), len(lines))
	}
}

// TestBundleLinesByFile: the source frames of a file's code are written
// once, by build-id and file offset, for every process mapping the file
// (at any address).
func TestBundleLinesByFile(t *testing.T) {
	s, id, _ := imageInThreeProcesses(t)
	defer s.close()
	_, lines := bundleAll(s, func() (kernelTable, error) { return nil, errors.New("none") }, func(int) int { return 0 }, nil, func(f string, a ...any) { t.Logf(f, a...) })
	byFile := map[uint64]int{}
	for _, l := range lines {
		switch {
		case l.Object == hex.EncodeToString(id):
			byFile[l.Addr]++
		case l.Object != "":
			t.Errorf("record about %q, want %x", l.Object, id)
		default:
			t.Errorf("record of process %d at %#x: every mapping has a build-id", l.PID, l.Addr)
		}
	}
	if len(byFile) == 0 {
		t.Fatal("no records about the file")
	}
	for off, n := range byFile {
		if n != 1 {
			t.Errorf("offset %#x described %d times, want once", off, n)
		}
	}
}

// TestBundleReturnAddresses: a return address is named, and its call (the
// byte before it) is named and gets source frames, whether the call was
// noted with its return address or sampled itself; the return address
// itself gets no frames.
func TestBundleReturnAddresses(t *testing.T) {
	path, id, offs := cachedImage(t)
	const pid, base = 4243, 0x400000
	s := newSymbolizer()
	s.open = func(int) (*container.Process, error) { return nil, errors.New("no such process") }
	defer s.close()
	s.mapped(pid, container.Mapping{Path: path, Start: base, End: base + 1<<20, BuildID: id})
	ip, ret1, ret2 := base+offs[1], base+offs[len(offs)/2], base+offs[len(offs)-2]
	s.sampled(pid, []uint64{capture.ContextUser, ip, ret1, ret2}, false, 10)
	s.sampled(pid, []uint64{capture.ContextUser, ret2 - 1}, false, 20) // the call sampled itself too
	syms, lines := bundleAll(s, func() (kernelTable, error) { return nil, errors.New("none") }, func(int) int { return 0 }, nil, func(f string, a ...any) { t.Logf(f, a...) })
	named := func(a uint64) bool {
		for _, sym := range syms {
			if a >= sym.Begin && a <= sym.End {
				return true
			}
		}
		return false
	}
	framed := map[uint64]bool{}
	for _, l := range lines {
		if l.Object != hex.EncodeToString(id) {
			t.Errorf("lines of %#x: about %q, want the file's build-id %x", l.Addr, l.Object, id)
		}
		framed[base+l.Addr] = true // offsets in the file, mapped at base
	}
	for _, a := range []uint64{ip, ret1, ret2, ret1 - 1, ret2 - 1} {
		if !named(a) {
			t.Errorf("%#x not named", a)
		}
	}
	for _, a := range []uint64{ip, ret1 - 1, ret2 - 1} {
		if !framed[a] {
			t.Errorf("%#x: no source frames", a)
		}
	}
	for _, a := range []uint64{ret1, ret2} {
		if framed[a] {
			t.Errorf("return address %#x has source frames of its own", a)
		}
	}
	if len(lines) != 3 {
		t.Errorf("%d addresses with frames, want 3", len(lines))
	}
}

// TestBundlePackedExited: the addresses of a process that exited are
// packed a grace period after its exit was read, and bundle as those of a
// process still running do; a sample read late unpacks them.
func TestBundlePackedExited(t *testing.T) {
	path, id, offs := cachedImage(t)
	const pid, base = 4244, 0x400000
	run := func(exit, late bool) ([]capture.Symbol, []capture.AddrLines) {
		s := newSymbolizer()
		s.open = func(int) (*container.Process, error) { return nil, errors.New("no such process") }
		defer s.close()
		s.mapped(pid, container.Mapping{Path: path, Start: base, End: base + 1<<20, BuildID: id})
		for i := 0; i+2 < len(offs); i += 3 {
			s.sampled(pid, []uint64{capture.ContextUser, base + offs[i], base + offs[i+2], base + offs[len(offs)-1-i]}, false, int64(10+i))
		}
		if exit {
			s.exited(pid, 1000)
			start := time.Now()
			s.packExited(start) // within the grace: not packed yet
			if g := &s.procs[pid].symGen; g.packed != nil {
				t.Error("packed within the grace period")
			}
			s.packExited(start.Add(packGrace))
			if s.procs[pid] != nil || !s.spill.has(pid) {
				t.Fatal("after the grace: not written out")
			}
			g := &s.spill.get(pid).symGen
			if g.user != nil || len(g.packed) == 0 || !slices.IsSorted(g.packed) || len(g.flags) != len(g.packed) {
				t.Fatalf("after the grace: %d in the map, %d packed (sorted %v), %d flags", g.user.Len(), len(g.packed), slices.IsSorted(g.packed), len(g.flags))
			}
			if len(s.exits) != 0 {
				t.Errorf("%d exits still queued", len(s.exits))
			}
		}
		if late {
			s.sampled(pid, []uint64{capture.ContextUser, base + offs[1]}, false, 5)
		}
		return bundleAll(s, func() (kernelTable, error) { return nil, errors.New("none") }, func(int) int { return 0 }, nil, func(f string, a ...any) { t.Logf(f, a...) })
	}
	wantSyms, wantLines := run(false, false)
	if len(wantSyms) == 0 || len(wantLines) == 0 {
		t.Fatalf("%d symbols, %d lines", len(wantSyms), len(wantLines))
	}
	if syms, lines := run(true, false); !reflect.DeepEqual(syms, wantSyms) || !reflect.DeepEqual(lines, wantLines) {
		t.Errorf("packed: %d symbols, %d lines; want %d, %d", len(syms), len(lines), len(wantSyms), len(wantLines))
	}
	lateSyms, lateLines := run(false, true)
	if syms, lines := run(true, true); !reflect.DeepEqual(syms, lateSyms) || !reflect.DeepEqual(lines, lateLines) {
		t.Errorf("packed, then a late sample: %d symbols, %d lines; want %d, %d", len(syms), len(lines), len(lateSyms), len(lateLines))
	}
}

// fakeKernel names kernel address a by the 256-byte block it is in.
type fakeKernel struct{}

func (fakeKernel) LookupSorted(addrs []uint64) ([]symbol.Symbol, []bool) {
	syms, found := make([]symbol.Symbol, len(addrs)), make([]bool, len(addrs))
	for i, a := range addrs {
		b := a &^ 0xff
		syms[i], found[i] = symbol.Symbol{Name: fmt.Sprintf("k_%x", b), Addr: b, Size: 0x100}, true
	}
	return syms, found
}

// TestBundlePackedKernel: the kernel addresses of a process that exited
// are packed with its user addresses (a map per process held them for
// the whole recording), and bundle as before; one sampled late joins them.
func TestBundlePackedKernel(t *testing.T) {
	const pid = 4245
	const k0 = 0xffffffff81000000
	run := func(exit, late bool) ([]capture.Symbol, *symProc) {
		s := newSymbolizer()
		s.open = func(int) (*container.Process, error) { return nil, errors.New("no such process") }
		defer s.close()
		for i := range uint64(40) {
			s.sampled(pid, []uint64{capture.ContextKernel, k0 + i*0x100 + 8, k0 + (i%7)*0x100 + 16}, false, int64(10+i))
		}
		if exit {
			s.exited(pid, 1000)
			s.packExited(time.Now().Add(packGrace))
		}
		if late {
			s.sampled(pid, []uint64{capture.ContextKernel, k0 + 0x9000}, false, 5)
		}
		syms, _ := bundleAll(s, func() (kernelTable, error) { return fakeKernel{}, nil }, func(int) int { return 0 }, nil, func(f string, a ...any) { t.Logf(f, a...) })
		return syms, s.lookup(pid)
	}
	want, _ := run(false, false)
	if len(want) != 40 {
		t.Fatalf("%d kernel symbols, want 40", len(want))
	}
	got, p := run(true, false)
	if p.kernel != nil {
		t.Errorf("after the grace: %d kernel addresses still in a map, want them packed", len(p.kernel))
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("packed: %d symbols, want %d", len(got), len(want))
	}
	wantLate, _ := run(false, true)
	if got, _ := run(true, true); !reflect.DeepEqual(got, wantLate) || len(wantLate) != 41 {
		t.Errorf("packed, then a late sample: %d symbols; want %d (41)", len(got), len(wantLate))
	}
}

// cachedBundle bundles the file offsets offs of the file at path (build-id
// id, its first size bytes mapped in a process that is gone) with the
// symbol cache c (nil: none), and returns the records and how the cache
// was used.
func cachedBundle(t *testing.T, c *symcache.Cache, path string, id []byte, size uint64, offs []uint64) ([]capture.Symbol, []capture.AddrLines, [3]int) {
	t.Helper()
	syms, lines, uses, fill := cachedBundleFill(t, c, path, id, size, offs)
	fill.Close()
	return syms, lines, uses
}

// cachedBundleFill is cachedBundle, which also returns what the bundle
// left to fill in the cache (see SymbolFill).
func cachedBundleFill(t *testing.T, c *symcache.Cache, path string, id []byte, size uint64, offs []uint64) ([]capture.Symbol, []capture.AddrLines, [3]int, *SymbolFill) {
	t.Helper()
	const pid, base = 42, 0x7f0000000000
	s := newSymbolizer()
	s.open = func(int) (*container.Process, error) { return nil, errors.New("no such process") }
	s.cache = c
	defer s.close()
	s.mapped(pid, container.Mapping{Path: path, Start: base, End: base + size, BuildID: id})
	for _, off := range offs {
		s.sampled(pid, []uint64{capture.ContextUser, base + off}, false, 10)
	}
	syms, lines := bundleAll(s, func() (kernelTable, error) { return nil, errors.New("none") }, func(int) int { return 0 }, nil, func(f string, a ...any) { t.Logf(f, a...) })
	var fill *SymbolFill
	if c != nil {
		fill = s.takeFill(c, 0)
	}
	return syms, lines, s.cacheUses, fill
}

// imageInThreeProcesses returns a symbolizer of processes 10, 11 and 12
// (which cannot be opened) mapping cachedImage's file at the bases given,
// each sampled at its offsets, and the file's build-id.
func imageInThreeProcesses(t *testing.T) (s *symbolizer, id []byte, bases map[int]uint64) {
	t.Helper()
	path, id, offs := cachedImage(t)
	s = newSymbolizer()
	s.open = func(int) (*container.Process, error) { return nil, errors.New("no such process") }
	bases = map[int]uint64{10: 0x400000, 11: 0x7f0000000000, 12: 0x500000}
	for pid, base := range bases {
		s.mapped(pid, container.Mapping{Path: path, Start: base, End: base + 1<<20, BuildID: id})
		for _, off := range offs {
			s.sampled(pid, []uint64{capture.ContextUser, base + off}, false, 10)
		}
	}
	return s, id, bases
}
