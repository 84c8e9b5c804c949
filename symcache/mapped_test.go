package symcache

import (
	"fmt"
	"path/filepath"
	"runtime"
	"slices"
	"testing"

	"nsprof/internal/testutils"
	"nsprof/symbol"
)

// putLargeEntry writes an entry of 200 000 addresses of four frames each
// (a few megabytes, most of it the addresses' frames) under testKey, its
// file written again a page at a time as if read back from the disk, and
// returns the entry written, its addresses sorted and the file's size.
func putLargeEntry(t *testing.T) (c *Cache, want *Entry, addrs []uint64, size int) {
	t.Helper()
	c = openTest(t, Options{})
	want = &Entry{Source: "symtab", LoadedAt: 1764115200, Frames: map[uint64][]symbol.Frame{}}
	for i := range 1000 {
		want.Symbols = append(want.Symbols, symbol.Symbol{Name: fmt.Sprintf("function_%d", i), Addr: 0x100000 + uint64(i)*0x1000, Size: 0x1000})
	}
	for i := range 200_000 {
		va := 0x100000 + uint64(i)*20 + uint64(i%7)
		fn := i / 200
		want.Frames[va] = []symbol.Frame{
			{Function: fmt.Sprintf("inlined_%d", fn%50), File: "/src/inline.h", Line: 10 + i%97},
			{Function: fmt.Sprintf("helper_%d", fn%100), File: "/src/helper.c", Line: 200 + i%1013},
			{Function: fmt.Sprintf("function_%d", fn), File: fmt.Sprintf("/src/f%d.c", fn%20), Line: 3000 + i%4099},
			{Function: "main", File: "/src/main.c", Line: 40000 + i%8191},
		}
		addrs = append(addrs, va)
	}
	if err := c.Put(testKey, want); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(c.Dir(), testKey)
	testutils.RewriteByPages(t, path)
	return c, want, addrs, int(stat(t, c, testKey).Size())
}

// TestGetMapsEntry checks that Get leaves an entry's file out of the
// heap, and its pages out of the process's resident set but for those
// lookups touch lately: the checksums, decoding and lookups of the
// whole file leave at most a quarter of it resident at any time.
func TestGetMapsEntry(t *testing.T) {
	c, want, addrs, size := putLargeEntry(t)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	e := getOK(t, c, testKey)
	defer e.Close()
	runtime.GC()
	runtime.ReadMemStats(&after)
	if grew := int(after.HeapAlloc) - int(before.HeapAlloc); grew > size/2 {
		t.Errorf("Get of a %d-byte entry grew the live heap by %d bytes", size, grew)
	}
	if e.mapped == nil {
		t.Fatal("Get did not map the entry's file")
	}
	// The file's own pages, not the process's file-backed RSS, which
	// other files move too (see testutils.ResidentBytes).
	fileGrew := func() int { return testutils.ResidentBytes(t, e.mapped.b) }
	if grew := fileGrew(); grew > size/4 {
		t.Errorf("Get of a %d-byte entry left %d bytes of file pages resident", size, grew)
	}
	most := 0
	for i := 0; i < len(addrs); i += 8 {
		va := addrs[i]
		fr, ok := e.FramesAt(va)
		if !ok || !slices.Equal(fr, want.Frames[va]) {
			t.Fatalf("FramesAt(%#x) = %v, %v; want %v", va, fr, ok, want.Frames[va])
		}
		if i%(8*128) == 0 {
			most = max(most, fileGrew())
		}
	}
	if most > size/4 {
		t.Errorf("looking up every 8th address of a %d-byte entry had up to %d bytes of file pages resident", size, most)
	}
	runtime.KeepAlive(e)
}

// TestEntryClose checks that a closed entry keeps its symbols and the
// frames decoded into its Frames, knows no other address (its file is
// gone, nothing read from it), and that Close may be called again, and
// on an entry that was not read.
func TestEntryClose(t *testing.T) {
	c, want, addrs, _ := putLargeEntry(t)
	e := getOK(t, c, testKey)
	if _, ok := e.FramesAt(addrs[0]); !ok {
		t.Fatalf("FramesAt(%#x) of the entry read: unknown", addrs[0])
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if fr, ok := e.FramesAt(addrs[1]); ok {
		t.Errorf("FramesAt(%#x) after Close = %v, want unknown", addrs[1], fr)
	}
	if !slices.Equal(e.Symbols, want.Symbols) {
		t.Errorf("%d symbols after Close, want %d the same", len(e.Symbols), len(want.Symbols))
	}
	if err := e.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if err := want.Close(); err != nil {
		t.Errorf("Close of an entry not read: %v", err)
	}
	if len(want.Frames) != len(addrs) {
		t.Errorf("Close of an entry not read left %d addresses of %d", len(want.Frames), len(addrs))
	}
}
