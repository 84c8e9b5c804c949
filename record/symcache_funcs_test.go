package record

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"nsprof/capture"
	"nsprof/symbol"
	"nsprof/symcache"
)

// checkNewAddresses bundles each set of file offsets of before with a
// cache, each followed by the filler when it left one (SymbolFill), then others (seen, which none before sampled, in the same
// functions) with the cache and without it: the bundle of seen must
// name the same symbols and source frames either way, and use the cache
// as want says.
func checkNewAddresses(t *testing.T, path string, id []byte, before [][]uint64, seen []uint64, want cacheUse) {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	run := func(c *symcache.Cache, offs []uint64) ([]capture.Symbol, []capture.AddrLines, [3]int) {
		return cachedBundle(t, c, path, id, uint64(st.Size()), offs)
	}
	wantSyms, wantLines, _ := run(nil, seen)
	inlined := 0
	for _, l := range wantLines {
		if len(l.Frames) > 1 {
			inlined++
		}
	}
	if len(wantSyms) == 0 || len(wantLines) == 0 || inlined == 0 {
		t.Fatalf("without the cache: %d symbols, %d lines, %d with inlined calls: the test checks too little", len(wantSyms), len(wantLines), inlined)
	}
	c, err := symcache.Open(filepath.Join(t.TempDir(), "symbols"), symcache.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for i, offs := range before {
		want := [3]int{cachePart: 1}
		if i == 0 {
			want = [3]int{cacheNone: 1}
		}
		uses, fill := bundleForFill(t, c, path, id, uint64(st.Size()), offs)
		if uses != want {
			t.Fatalf("bundle %d: uses %v, want %v", i+1, uses, want)
		}
		if fill.Files() > 0 {
			runFill(t, c, fill)
		}
	}
	syms, lines, uses := run(c, seen)
	var wantUses [3]int
	wantUses[want] = 1
	if uses != wantUses {
		t.Errorf("bundle of new addresses: uses %v, want %v", uses, wantUses)
	}
	if !reflect.DeepEqual(syms, wantSyms) {
		t.Errorf("symbols with the cache differ from those without it")
	}
	if !reflect.DeepEqual(lines, wantLines) {
		want := make(map[uint64][]capture.SourceFrame)
		for _, l := range wantLines {
			want[l.Addr] = l.Frames
		}
		bad := 0
		for _, l := range lines {
			if !reflect.DeepEqual(l.Frames, want[l.Addr]) {
				if bad++; bad <= 5 {
					t.Errorf("%#x: frames from the cache %v, without it %v", l.Addr, l.Frames, want[l.Addr])
				}
			}
			delete(want, l.Addr)
		}
		for a, fr := range want {
			if bad++; bad <= 10 {
				t.Errorf("%#x: no frames from the cache, without it %v", a, fr)
			}
		}
	}
	t.Logf("%d addresses new to the cache, %d with source frames (%d with inlined calls)", len(seen), len(wantLines), inlined)
}

// funcOffsets returns the file offsets of every step-th byte of the
// named functions of the ELF file at path.
func funcOffsets(t *testing.T, path string, step uint64, names ...string) (offs []uint64) {
	t.Helper()
	f, err := symbol.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tab, err := f.Symbols() // a Go test binary's from its line table: it has no .symtab
	if err != nil {
		t.Fatal(err)
	}
	want := make(map[string]bool)
	for _, n := range names {
		want[n] = true
	}
	for _, s := range tab.All() {
		if !want[s.Name] {
			continue
		}
		delete(want, s.Name)
		for d := uint64(0); d < s.Size; d += step {
			if off, ok := f.FileOffset(s.Addr + d); ok {
				offs = append(offs, off)
			}
		}
	}
	if len(want) > 0 {
		t.Fatalf("%s: functions %v not found", path, want)
	}
	return offs
}

// split deals offs out into n sets, round robin.
func split(offs []uint64, n int) [][]uint64 {
	out := make([][]uint64, n)
	for i, o := range offs {
		out[i%n] = append(out[i%n], o)
	}
	return out
}

// A file with DWARF has its functions cached whole by the filler the
// first recording of it starts: a second recording's new addresses come
// from the cache, with the frames the C program's DWARF gives them,
// inlined calls included.
func TestSymbolCacheNewAddressesDWARF(t *testing.T) {
	path, id, _ := cachedImage(t)
	sets := split(funcOffsets(t, path, 1, "leaf_fn", "mid_fn", "main"), 2)
	checkNewAddresses(t, path, id, sets[:1], sets[1], cacheAll)
}

// testImage returns the path and build-id of this test's binary, a Go one.
func testImage(t *testing.T) (path string, id []byte) {
	t.Helper()
	path, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	f, err := symbol.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	return path, f.BuildID()
}

// For a Go binary (this test's) the file's line table is read again for
// addresses new to the entry, however often, with the entry's symbol
// table, and gives the same frames.
func TestSymbolCacheNewAddressesGo(t *testing.T) {
	path, id := testImage(t)
	sets := split(funcOffsets(t, path, 3, "runtime.mallocgc", "nsprof/record.(*symObj).resolve", "runtime.findRunnable", "nsprof/record.(*symbolizer).bundle"), 3)
	checkNewAddresses(t, path, id, sets[:2], sets[2], cachePart)
}

// Addresses new to a Go binary's entry, however few, are appended to its
// file as a delta (the entry is not written whole again: its symbol
// table and every address before), and the next bundle of them reads
// them from the cache, with the frames a bundle without it gives.
func TestSymbolCacheGoNewAppended(t *testing.T) {
	path, id := testImage(t)
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	run := func(c *symcache.Cache, offs []uint64) ([]capture.Symbol, []capture.AddrLines, [3]int) {
		return cachedBundle(t, c, path, id, uint64(st.Size()), offs)
	}
	c, err := symcache.Open(filepath.Join(t.TempDir(), "symbols"), symcache.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	run(c, funcOffsets(t, path, 3, "runtime.mallocgc"))
	entry := func() os.FileInfo {
		t.Helper()
		ents, err := os.ReadDir(c.Dir())
		if err != nil || len(ents) != 1 {
			t.Fatalf("cache directory: %v, %v; want one entry", ents, err)
		}
		st, err := os.Stat(filepath.Join(c.Dir(), ents[0].Name()))
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	first := entry()
	few := funcOffsets(t, path, 1, "nsprof/record.overlaps")
	many := funcOffsets(t, path, 1, "runtime.findRunnable", "nsprof/record.(*symbolizer).bundle")
	for i, offs := range [][]uint64{few, many} {
		wantSyms, wantLines, _ := run(nil, offs)
		if _, _, uses := run(c, offs); uses != [3]int{cachePart: 1} {
			t.Errorf("bundle of %d new addresses: uses %v, want the file read", len(offs), uses)
		}
		if w := c.Stats().Written; w != i+2 {
			t.Errorf("%d entries written, want %d (one for %d new addresses)", w, i+2, len(offs))
		}
		// Appended to the entry's file as a delta, not the file
		// written anew with the symbol table.
		if st := entry(); !os.SameFile(first, st) || st.Size() <= first.Size() {
			t.Errorf("the entry was written whole again (%d bytes, then %d): want the new addresses appended", first.Size(), st.Size())
		}
		syms, lines, uses := run(c, offs)
		if uses != [3]int{cacheAll: 1} {
			t.Errorf("%d addresses again: uses %v, want all from the cache", len(offs), uses)
		}
		if !reflect.DeepEqual(syms, wantSyms) || !reflect.DeepEqual(lines, wantLines) {
			t.Errorf("bundle of the %d addresses appended differs from one without the cache", len(offs))
		}
	}
}
