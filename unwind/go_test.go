package unwind

import (
	"bytes"
	"cmp"
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"nsprof/internal/pageread"
	"nsprof/internal/testutils"
	"nsprof/symbol"
)

// buildGo builds a small Go program with extra ldflags.
func buildGo(t *testing.T, ldflags string) string {
	t.Helper()
	goTool := testutils.LookPathOrSkip(t, "go")
	dir := t.TempDir()
	src := "package main\n\n//go:noinline\nfunc leaf(x int) int { return x * 3 }\n\nfunc main() { println(leaf(len(\"x\"))) }\n"
	os.WriteFile(filepath.Join(dir, "main.go"), []byte(src), 0o644)
	os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module p\n\ngo 1.22\n"), 0o644)
	out := filepath.Join(dir, "p")
	cmd := exec.Command(goTool, "build", "-ldflags="+ldflags, "-o", out, ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, b)
	}
	return out
}

// allRows returns t's rows with every Go function's decoded, sorted.
func allRows(t *Table) []row {
	out := slices.Clone(t.rows)
	if g := t.gofuncs; g != nil {
		for i := range g.nfunc {
			if !g.covered(g.text + g.entry(i)) {
				out = append(out, g.decodedRows(i)...)
			}
		}
	}
	slices.SortStableFunc(out, func(a, b row) int { return cmp.Compare(a.addr, b.addr) })
	return out
}

// TestGoRowsDecodedOnUse: a Go binary's table decodes no function when
// loaded, one when an address in it is looked up, and gives at every
// address the row the whole pclntab decoded at once gives.
func TestGoRowsDecodedOnUse(t *testing.T) {
	tab := loadFile(t, buildGo(t, "-s -w"))
	g := tab.gofuncs
	if g == nil {
		t.Fatal("no Go functions in the table of a Go binary")
	}
	if n := len(g.funcs); n != 0 {
		t.Errorf("%d functions decoded at load, want 0", n)
	}
	var want []row
	for i := range g.nfunc {
		want = append(want, g.decodedRows(i)...)
	}
	if len(want) < 1000 {
		t.Fatalf("%d rows", len(want))
	}
	if r := tab.find(want[0].addr); r == nil || *r != want[0] {
		t.Fatalf("find(%#x) = %+v, want %+v", want[0].addr, r, want[0])
	}
	if n := len(g.funcs); n != 1 {
		t.Errorf("%d functions decoded after one lookup, want 1", n)
	}
	bad := 0
	for i, w := range want {
		if w.cfa == cfaNone {
			continue
		}
		end := w.addr + 1
		if i+1 < len(want) {
			end = want[i+1].addr
		}
		for _, a := range []uint64{w.addr, (w.addr + end) / 2, end - 1} {
			if r := tab.find(a); r == nil || *r != w {
				if bad++; bad <= 5 {
					t.Errorf("find(%#x) = %+v, want %+v", a, r, w)
				}
			}
		}
	}
	if bad > 0 {
		t.Errorf("%d lookups differ from the whole table's", bad)
	}
}

// A stripped Go binary has no CFI; its .gopclntab's pcsp tables give
// rows as .debug_frame does for an unstripped one.
func TestGoPclntab(t *testing.T) {
	full := loadFile(t, buildGo(t, ""))
	stripped := loadFile(t, buildGo(t, "-s -w"))
	rows := allRows(stripped)
	t.Logf("full: %d rows, stripped: %d rows", len(allRows(full)), len(rows))
	if len(rows) < 1000 {
		t.Fatalf("stripped Go binary: %d rows", len(rows))
	}
	// The Go linker writes .debug_frame from the same pcsp tables: the
	// CFA and return address agree at every row.
	bad, n := 0, 0
	for _, r := range rows {
		if r.cfa == cfaNone {
			continue
		}
		n++
		w := full.find(r.addr)
		if w == nil || w.cfa != r.cfa || w.cfaOff != r.cfaOff || w.ra != r.ra || w.raOff != r.raOff {
			bad++
			if bad < 5 {
				t.Errorf("%#x: pclntab %+v, .debug_frame %+v", r.addr, r, w)
			}
		}
	}
	t.Logf("%d of %d pclntab rows agree with .debug_frame", n-bad, n)
}

// TestGoPclntabFoundAsSymbolFindsIt reads a stripped position-independent
// Go binary whose line table is in .data.rel.ro.gopclntab, as Go 1.25 and
// earlier name it in such builds (made here by renaming Go 1.26's
// .gopclntab): every function symbol names from the table must have
// unwind rows from the same table.
func TestGoPclntabFoundAsSymbolFindsIt(t *testing.T) {
	goTool := testutils.LookPathOrSkip(t, "go")
	objcopy := testutils.LookPathOrSkip(t, "objcopy")
	dir := t.TempDir()
	src := "package main\n\n//go:noinline\nfunc leaf(x int) int { return x * 3 }\n\nfunc main() { println(leaf(len(\"x\"))) }\n"
	os.WriteFile(filepath.Join(dir, "main.go"), []byte(src), 0o644)
	os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module p\n\ngo 1.22\n"), 0o644)
	built, bin := filepath.Join(dir, "p"), filepath.Join(dir, "p.relro")
	cmd := exec.Command(goTool, "build", "-buildmode=pie", "-ldflags=-s -w", "-o", built, ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, b)
	}
	if b, err := exec.Command(objcopy, "--rename-section", ".gopclntab=.data.rel.ro.gopclntab", built, bin).CombinedOutput(); err != nil {
		t.Fatalf("objcopy: %v\n%s", err, b)
	}

	sf, err := symbol.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer sf.Close()
	syms, err := sf.Symbols()
	if err != nil {
		t.Fatalf("symbol: %v", err)
	}
	tab := loadFile(t, bin)
	missing, leaf := 0, false
	for _, s := range syms.All() {
		leaf = leaf || s.Name == "main.leaf"
		if strings.HasPrefix(s.Name, "runtime.call") && len(s.Name) > len("runtime.call16777") {
			continue // reflectcall frames of 16 MiB and more: beyond goFuncs' bound
		}
		if strings.HasPrefix(s.Name, "go:") {
			continue // linker markers (go:textfipsstart), no code
		}
		if r := tab.find(s.Addr); r == nil || r.cfa == cfaNone {
			if missing++; missing <= 5 {
				t.Errorf("%s at %#x: named by symbol, no unwind row", s.Name, s.Addr)
			}
		}
	}
	if !leaf {
		t.Error("symbol names no main.leaf")
	}
	if missing > 0 {
		t.Errorf("%d of %d functions without unwind rows (%d rows)", missing, syms.Len(), tab.Len())
	}
}

// TestGoTableKeepsLittleOfPclntab: a Go binary's table keeps the function
// entries and pcsp tables of its pclntab, not the pclntab: the recorder
// holds one table per Go binary sampled for the whole recording.
func TestGoTableKeepsLittleOfPclntab(t *testing.T) {
	tab, ef := strippedGoTable(t)
	s := ef.Section(".gopclntab")
	if s == nil || tab.gofuncs == nil {
		t.Fatal("no .gopclntab, or no Go functions in the table")
	}
	if kept := tab.gofuncs.size(); kept == 0 || uint64(kept) > s.Size/4 {
		t.Errorf("table keeps %d bytes of a %d-byte pclntab, want under a quarter", kept, s.Size)
	}
	if tab.Size() < tab.gofuncs.size() {
		t.Errorf("Size %d does not count the %d bytes kept", tab.Size(), tab.gofuncs.size())
	}
}

// TestGoFuncsReadFromFile: a Go binary's pcsp tables copied out while the
// pclntab is read from the file in pages are those copied out of the
// pclntab held whole.
func TestGoFuncsReadFromFile(t *testing.T) {
	tab, ef := strippedGoTable(t)
	data, err := ef.Section(".gopclntab").Data()
	if err != nil {
		t.Fatal(err)
	}
	text, _ := bases(ef)
	held, lazy := newGoFuncs(pageread.Held(data), text), tab.gofuncs
	if held == nil || lazy == nil {
		t.Fatalf("goFuncs: held %v, read from the file %v", held != nil, lazy != nil)
	}
	if !slices.Equal(held.entries, lazy.entries) || !slices.Equal(held.sp, lazy.sp) || !bytes.Equal(held.pcsp, lazy.pcsp) {
		t.Errorf("tables differ: %d/%d entries, %d/%d pcsp bytes", len(held.entries), len(lazy.entries), len(held.pcsp), len(lazy.pcsp))
	}
	n := 0
	for i := range lazy.nfunc {
		if lazy.sp[i] != 0 {
			n++
		}
	}
	if n < lazy.nfunc/2 {
		t.Errorf("pcsp tables for %d of %d functions", n, lazy.nfunc)
	}
}

// strippedGoTable builds the Go fixture stripped (-s -w: no .symtab, no
// DWARF) and returns its unwind table and the binary opened, closed when
// the test ends.
func strippedGoTable(t *testing.T) (*Table, *elf.File) {
	t.Helper()
	bin := buildGo(t, "-s -w")
	tab := loadFile(t, bin)
	ef, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ef.Close() })
	return tab, ef
}

// The bucket index finds, for every offset, the function a binary search
// of the entries finds: over a Go binary's text and past its ends, and
// over synthetic tables of hundreds of functions at one address (the
// index saturated), of a gap of many buckets, and out of order (a
// hostile table: an answer, no fault).
func TestGoFuncsIndex(t *testing.T) {
	check := func(t *testing.T, g *goFuncs, offs []uint64) {
		t.Helper()
		got := make([]int, len(offs))
		for i, off := range offs {
			got[i] = g.lookup(off)
		}
		buckets := g.buckets
		g.buckets = nil // a binary search
		defer func() { g.buckets = buckets }()
		bad := 0
		for i, off := range offs {
			if want := g.lookup(off); got[i] != want {
				if bad++; bad <= 5 {
					t.Errorf("lookup(%#x) = %d, binary search %d", off, got[i], want)
				}
			}
		}
	}
	g := loadFile(t, buildGo(t, "-s -w")).gofuncs
	if g == nil || g.buckets == nil {
		t.Fatal("no indexed Go functions in the table of a Go binary")
	}
	var offs []uint64
	for i := range g.nfunc + 1 {
		e := g.entry(i)
		offs = append(offs, e, e+1, e+255, e+256, e+4095, e+4096)
		if e > 0 {
			offs = append(offs, e-1)
		}
	}
	offs = append(offs, 0, 1<<40)
	check(t, g, offs)

	synth := func(entries ...uint32) *goFuncs {
		g := &goFuncs{nfunc: len(entries) - 1, entries: entries}
		g.index()
		return g
	}
	dense := []uint32{0x100}
	for range 600 {
		dense = append(dense, 0x180) // 600 functions at one address
	}
	dense = append(dense, 0x200, 0x3000, 0x3010)
	g = synth(dense...)
	if g.buckets == nil {
		t.Fatal("dense table not indexed")
	}
	var all []uint64
	for off := uint64(0); off < 0x4000; off += 7 {
		all = append(all, off)
	}
	check(t, g, append(all, 0x180, 0x17f, 0x200, 0x3010, 0x3011))
	g = synth(0, 0x10, 0x300000, 0x300010)
	if g.buckets == nil {
		t.Fatal("table with a gap not indexed")
	}
	check(t, g, append(all, 0x2fffff, 0x300000, 0x30000f, 0x300010, 0x300011))
	if g := synth(0, 0x10, 0xffff0000, 0xffff0010); g.buckets != nil {
		t.Errorf("%d buckets for 3 functions over 4 GiB", len(g.buckets))
	}
	// Out of order: any answer, within the table.
	g = synth(0x5000, 0x100, 0x3000, 0x20, 0x6000)
	for _, off := range all {
		if i := g.lookup(off); i < -1 || i >= g.nfunc {
			t.Fatalf("lookup(%#x) = %d of %d functions", off, i, g.nfunc)
		}
	}
}

// TestGoRowsSizedExactly: a decoded Go function's rows, kept for the whole
// recording, hold no room beyond their last row and come from a single
// allocation (grown by append, they held up to twice their size).
func TestGoRowsSizedExactly(t *testing.T) {
	tab := loadFile(t, buildGo(t, "-s -w"))
	g := tab.gofuncs
	if g == nil {
		t.Fatal("no Go functions in the table of a Go binary")
	}
	decoded, most := 0, -1
	for i := range g.nfunc {
		rows := g.decode(i)
		if rows == nil {
			continue
		}
		decoded++
		if cap(rows) != len(rows) {
			t.Fatalf("function %d: %d rows in room for %d", i, len(rows), cap(rows))
		}
		if most < 0 || len(rows) > len(g.decode(most)) {
			most = i
		}
	}
	if decoded < 1000 {
		t.Fatalf("%d functions decoded", decoded)
	}
	if a := testing.AllocsPerRun(10, func() { g.decode(most) }); a != 1 {
		t.Errorf("decoding function %d (%d rows): %.0f allocations, want 1", most, len(g.decode(most)), a)
	}
}

// TestGoRowsCompact: decoding every function of a Go binary allocates
// about 8 bytes a row (a 24-byte row each, as Table rows take, was the
// largest growing part of a recording's heap over Go compiles).
func TestGoRowsCompact(t *testing.T) {
	tab := loadFile(t, buildGo(t, "-s -w"))
	g := tab.gofuncs
	if g == nil {
		t.Fatal("no Go functions in the table of a Go binary")
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	rows := 0
	for i := range g.nfunc {
		rows += len(g.decode(i))
	}
	runtime.ReadMemStats(&after)
	if rows < 1000 {
		t.Fatalf("%d rows", rows)
	}
	perRow := float64(after.TotalAlloc-before.TotalAlloc) / float64(rows)
	t.Logf("%d rows of %d functions: %.1f bytes allocated a row", rows, g.nfunc, perRow)
	if perRow > 12 {
		t.Errorf("%.1f bytes allocated a decoded row, want at most 12", perRow)
	}
}
