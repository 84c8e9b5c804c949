package record

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"nsprof/internal/testutils"
	"nsprof/symcache"
	"nsprof/unwind"
)

// buildGoBinary builds a small pure Go program, mode 0755.
func buildGoBinary(t *testing.T) string {
	t.Helper()
	goTool := testutils.LookPathOrSkip(t, "go")
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "main.go"), []byte("package main\n\nfunc main() { println(\"x\") }\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module p\n\ngo 1.22\n"), 0o644)
	out := filepath.Join(dir, "p")
	cmd := exec.Command(goTool, "build", "-o", out, ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, b)
	}
	return out
}

// countingLoad returns a load of f's table, and how many times it read
// the file.
func countingLoad(f *os.File) (func() (*unwind.Table, error), *int) {
	n := new(int)
	return func() (*unwind.Table, error) {
		*n++
		return unwind.Load(f, nil)
	}, n
}

// TestGoUnwindTableCached: a Go binary's unwind table is read from its
// file once, then taken from the symbol cache by later recordings (a new
// goTables each), the same table; a file others can write has its table
// read every time, and a blob that does not decode is read over.
func TestGoUnwindTableCached(t *testing.T) {
	bin := buildGoBinary(t)
	f, err := os.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	dir := filepath.Join(t.TempDir(), "cache")
	o := &symObj{path: bin, f: f}
	var tabs []*unwind.Table
	for i := range 3 {
		g := &goTables{dir: dir}
		read, n := countingLoad(f)
		tab, err := g.load(o, read)
		if err != nil || tab == nil {
			t.Fatalf("recording %d: %v", i, err)
		}
		want := 0
		if i == 0 {
			want = 1
		}
		if *n != want || g.hits != 1-want {
			t.Fatalf("recording %d: file read %d times, %d tables from the cache; want %d read", i, *n, g.hits, want)
		}
		g.close()
		tabs = append(tabs, tab)
	}
	want, _ := tabs[0].AppendGo(nil)
	for _, tab := range tabs[1:] {
		if got, _ := tab.AppendGo(nil); string(got) != string(want) {
			t.Fatal("the cached table is not the one read from the file")
		}
	}

	// A blob that does not decode: the file is read, and its table kept
	// again.
	c, err := symcache.Open(dir, symcache.Options{})
	if err != nil {
		t.Fatal(err)
	}
	key := goTableKey(f)
	if err := c.PutBlob(key, []byte("not a table")); err != nil {
		t.Fatal(err)
	}
	for i, wantReads := range []int{1, 0} {
		g := &goTables{dir: dir}
		read, n := countingLoad(f)
		if tab, _ := g.load(o, read); tab == nil || *n != wantReads {
			t.Fatalf("after a bad blob, recording %d: file read %d times, want %d", i, *n, wantReads)
		}
		g.close()
	}

	// A file others can write is not cached.
	os.Remove(filepath.Join(dir, key))
	if err := os.Chmod(bin, 0o777); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		g := &goTables{dir: dir}
		read, n := countingLoad(f)
		if tab, _ := g.load(o, read); tab == nil || *n != 1 {
			t.Fatalf("world-writable file, recording %d: read %d times, want 1", i, *n)
		}
		g.close()
	}
	c.Close()
}
