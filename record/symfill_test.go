package record

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"nsprof/internal/testutils"
	"nsprof/symbol"
	"nsprof/symcache"
)

// fillerEnv makes this test binary the filler (see TestMain).
const fillerEnv = "NSPROF_TEST_FILLER"

// TestMain runs the test binary as the symbol cache filler when
// SymbolFill.Start, through FillProgram, runs it so.
func TestMain(m *testing.M) {
	if os.Getenv(fillerEnv) == "1" {
		fs := flag.NewFlagSet(FillCommand, flag.ExitOnError)
		var opts FillOptions
		fs.StringVar(&opts.Dir, "dir", "", "")
		fs.Int64Var(&opts.MaxBytes, "max-bytes", 0, "")
		fs.Func("file", "", func(v string) error { opts.Files = append(opts.Files, v); return nil })
		fs.DurationVar(&opts.Budget, "budget", 0, "")
		if len(os.Args) < 2 || os.Args[1] != FillCommand {
			fmt.Fprintf(os.Stderr, "filler started as %q\n", os.Args)
			os.Exit(2)
		}
		fs.Parse(os.Args[2:])
		if err := FillSymbolCache(opts); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	exe, err := os.Executable()
	if err == nil {
		FillProgram = func() (string, []string) { return exe, append(os.Environ(), fillerEnv+"=1") }
	}
	os.Exit(m.Run())
}

// waitFillers makes the fillers StartFill starts until the test ends
// waited for before its TempDir cleanups remove the caches they write
// into.
func waitFillers(t *testing.T) {
	var pids []int
	fillStarted = func(pid int) { pids = append(pids, pid) }
	t.Cleanup(func() {
		fillStarted = nil
		for _, pid := range pids {
			var ws syscall.WaitStatus
			syscall.Wait4(pid, &ws, 0, nil)
		}
	})
}

// bundleForFill bundles the file offsets offs of the file at path
// (build-id id, its first size bytes mapped), as cachedBundle does, and
// returns how the cache was used and what the bundle left to fill.
func bundleForFill(t *testing.T, c *symcache.Cache, path string, id []byte, size uint64, offs []uint64) ([3]int, *SymbolFill) {
	t.Helper()
	_, _, uses, fill := cachedBundleFill(t, c, path, id, size, offs)
	return uses, fill
}

// runFill starts f's filler, waits for it, and returns the cache's fill
// log; the filler must exit with status 0.
func runFill(t *testing.T, c *symcache.Cache, f *SymbolFill) string {
	t.Helper()
	if f.Files() == 0 {
		t.Fatal("nothing left to fill")
	}
	pid, err := f.Start()
	if err != nil {
		t.Fatal(err)
	}
	var ws syscall.WaitStatus
	if _, err := syscall.Wait4(pid, &ws, 0, nil); err != nil {
		t.Fatalf("waiting for the filler %d: %v", pid, err)
	}
	log, _ := os.ReadFile(filepath.Join(c.Dir(), symcache.FillLogName))
	if !ws.Exited() || ws.ExitStatus() != 0 {
		t.Fatalf("filler: %v\n%s", ws, log)
	}
	return string(log)
}

func openCache(t *testing.T) *symcache.Cache {
	t.Helper()
	c, err := symcache.Open(filepath.Join(t.TempDir(), "symbols"), symcache.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// A file with DWARF read for the first time is handed to the filler,
// which caches all its functions: the next bundle, of a function never
// sampled, reads nothing of the file, with the frames a bundle without
// the cache gives. The bundle itself caches only the addresses it
// resolved.
func TestSymbolFillWholeEntry(t *testing.T) {
	path, id, _ := cachedImage(t)
	c := openCache(t)
	main := funcOffsets(t, path, 1, "main")
	wantSyms, wantLines, _ := cachedBundle(t, nil, path, id, 1<<20, main)
	uses, fill := bundleForFill(t, c, path, id, 1<<20, funcOffsets(t, path, 1, "leaf_fn"))
	if uses != [3]int{cacheNone: 1} {
		t.Fatalf("first bundle: uses %v", uses)
	}
	if fill.Files() != 1 {
		t.Fatalf("first bundle left %d files to fill, want 1", fill.Files())
	}
	e, _ := c.Get(symcache.Key(id, nil))
	if e == nil || len(e.Covered) != 0 {
		t.Fatalf("after the bundle: entry %v; want one of the addresses resolved only", e)
	}
	log := runFill(t, c, fill)
	t.Logf("fill log:\n%s", log)
	syms, lines, uses := cachedBundle(t, c, path, id, 1<<20, main)
	if uses != [3]int{cacheAll: 1} {
		t.Errorf("bundle after the filler: uses %v, want all from the cache", uses)
	}
	if !reflect.DeepEqual(syms, wantSyms) || !reflect.DeepEqual(lines, wantLines) {
		t.Errorf("bundle after the filler differs from one without the cache:\n%v\n%v\nwant\n%v\n%v", syms, lines, wantSyms, wantLines)
	}
	// Whole: nothing more to hand over.
	if _, fill := bundleForFill(t, c, path, id, 1<<20, funcOffsets(t, path, 1, "mid_fn")); fill.Files() != 0 {
		t.Errorf("a whole entry was handed over again (%d files)", fill.Files())
		fill.Close()
	}
}

// A file whose debug file debuginfod served is handed over with it:
// the filler, asking no server (it is stopped before the filler runs),
// caches the file whole, and the next bundle reads nothing of it, with
// the frames the server's debug file gives.
func TestSymbolFillDebuginfod(t *testing.T) {
	path, id, _ := cachedImage(t)
	served, dir := t.TempDir(), t.TempDir()
	objcopy := testutils.LookPathOrSkip(t, "objcopy")
	stripped := filepath.Join(dir, "cached")
	for _, args := range [][]string{{"--only-keep-debug", path, filepath.Join(served, "cached.debug")}, {"--strip-all", path, stripped}} {
		if out, err := exec.Command(objcopy, args...).CombinedOutput(); err != nil {
			t.Fatalf("objcopy %q: %v\n%s", args, err, out)
		}
	}
	url, stop := testutils.StartDebuginfod(t, served, id)
	t.Setenv("DEBUGINFOD_URLS", url)
	t.Setenv("DEBUGINFOD_CACHE_PATH", t.TempDir())
	main := funcOffsets(t, path, 1, "main")
	wantSyms, wantLines, _ := cachedBundle(t, nil, stripped, id, 1<<20, main)
	if len(wantLines) == 0 {
		t.Fatal("no source lines from the debug file debuginfod serves")
	}
	c := openCache(t)
	uses, fill := bundleForFill(t, c, stripped, id, 1<<20, funcOffsets(t, path, 1, "leaf_fn"))
	if e, _ := c.Get(symcache.Key(id, nil)); uses != [3]int{cacheNone: 1} || e == nil || e.Source != symbol.SourceDebuginfod {
		t.Fatalf("first bundle: uses %v, entry %v; want symbols from debuginfod", uses, e)
	}
	if fill.Files() != 1 {
		t.Fatalf("first bundle left %d files to fill, want 1", fill.Files())
	}
	stop()
	t.Logf("fill log:\n%s", runFill(t, c, fill))
	syms, lines, uses := cachedBundle(t, c, stripped, id, 1<<20, main)
	if uses != [3]int{cacheAll: 1} {
		t.Errorf("bundle after the filler: uses %v, want all from the cache", uses)
	}
	if !reflect.DeepEqual(syms, wantSyms) || !reflect.DeepEqual(lines, wantLines) {
		t.Errorf("bundle after the filler differs from one from debuginfod:\n%v\n%v\nwant\n%v\n%v", syms, lines, wantSyms, wantLines)
	}
}

// The filler reads the files handed over, not what their paths name by
// then: the file is replaced by another build before it runs, and the
// entry is filled with the frames of the file the recording read.
func TestSymbolFillReadsHandedFiles(t *testing.T) {
	orig, id, _ := cachedImage(t)
	path := filepath.Join(t.TempDir(), "prog")
	copyFile(t, orig, path)
	other := otherImage(t)
	c := openCache(t)
	main := funcOffsets(t, path, 1, "main")
	want := dwarfFrames(t, path, main)
	_, fill := bundleForFill(t, c, path, id, 1<<20, funcOffsets(t, path, 1, "leaf_fn"))
	// Another build planted at the path, as a user could between the
	// recording and the filler.
	copyFile(t, other, path+".new")
	if err := os.Rename(path+".new", path); err != nil {
		t.Fatal(err)
	}
	log := runFill(t, c, fill)
	e, err := c.Get(symcache.Key(id, nil))
	if e == nil {
		t.Fatalf("entry: %v", err)
	}
	if !strings.Contains(log, "functions added") {
		t.Errorf("fill log does not say the entry was filled:\n%s", log)
	}
	for va, fr := range want {
		got, ok := e.FramesAt(va)
		if !ok || (len(got) > 0 || len(fr) > 0) && !reflect.DeepEqual(got, fr) {
			t.Errorf("%#x: entry has %v (%v), the original file %v", va, got, ok, fr)
		}
	}
}

// One filler fills a cache at a time: another finds the lock held, logs
// it, fills nothing and exits with status 0; once the lock is free, a
// filler fills.
func TestSymbolFillLock(t *testing.T) {
	path, id, _ := cachedImage(t)
	c := openCache(t)
	unlock, ok, err := c.LockFill()
	if !ok || err != nil {
		t.Fatalf("lock: %v, %v", ok, err)
	}
	_, fill := bundleForFill(t, c, path, id, 1<<20, funcOffsets(t, path, 1, "leaf_fn"))
	log := runFill(t, c, fill)
	if !strings.Contains(log, "another process is filling") {
		t.Errorf("fill log does not say the lock was held:\n%s", log)
	}
	if e, _ := c.Get(symcache.Key(id, nil)); e == nil || len(e.Covered) != 0 {
		t.Fatalf("entry filled while the lock was held: %v", e)
	}
	if _, again, _ := c.LockFill(); again {
		t.Error("the lock was taken twice")
	}
	unlock()
	_, fill = bundleForFill(t, c, path, id, 1<<20, funcOffsets(t, path, 1, "mid_fn"))
	runFill(t, c, fill)
	if e, _ := c.Get(symcache.Key(id, nil)); e == nil || len(e.Covered) == 0 {
		t.Errorf("entry not filled once the lock was free: %v", e)
	}
}

// A file the filler cannot fill (its entry gone, corrupt) is logged and
// the other files are filled; the filler exits with status 0.
func TestSymbolFillErrorsLogged(t *testing.T) {
	path, id, _ := cachedImage(t)
	path2 := otherImage(t)
	id2 := buildIDOf(t, path2)
	c := openCache(t)
	_, fill := bundleForFill(t, c, path, id, 1<<20, funcOffsets(t, path, 1, "leaf_fn"))
	_, fill2 := bundleForFill(t, c, path2, id2, 1<<20, funcOffsets(t, path2, 1, "leaf_fn"))
	bad := filepath.Join(c.Dir(), symcache.Key(id, nil))
	if err := os.WriteFile(bad, []byte("nsprofSC garbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	log := runFill(t, c, joinFill(fill, fill2))
	if !strings.Contains(log, path+": ") || !strings.Contains(log, "1 of 2 entries filled") {
		t.Errorf("fill log does not tell the corrupt entry and the one filled:\n%s", log)
	}
	if e, _ := c.Get(symcache.Key(id2, nil)); e == nil || len(e.Covered) == 0 {
		t.Errorf("the other file's entry not filled: %v", e)
	}
}

// otherImage builds a C program of other code than cachedImage's (another
// build-id), with the same function names.
func otherImage(t *testing.T) string {
	t.Helper()
	src := filepath.Join(t.TempDir(), "other.c")
	code := `__attribute__((noinline)) int leaf_fn(int x) { return x * 7 + 1; }
__attribute__((noinline)) int mid_fn(int x) { return leaf_fn(x) - 3; }
int main(int c, char **v) { return mid_fn(c) + 11; }
`
	if err := os.WriteFile(src, []byte(code), 0o644); err != nil {
		t.Fatal(err)
	}
	return testutils.BuildC(t, src, "-g", "-O1", "-Wl,--build-id")
}

func buildIDOf(t *testing.T, path string) []byte {
	t.Helper()
	f, err := symbol.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	return f.BuildID()
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o755); err != nil {
		t.Fatal(err)
	}
}

// dwarfFrames returns the frames the file at path gives the link-time
// addresses of its file offsets offs.
func dwarfFrames(t *testing.T, path string, offs []uint64) map[uint64][]symbol.Frame {
	t.Helper()
	f, err := symbol.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	l := symbol.Loader{}
	syms, err := l.Load(f, path)
	if err != nil {
		t.Fatal(err)
	}
	out := make(map[uint64][]symbol.Frame)
	for _, off := range offs {
		va, ok := f.Vaddr(off)
		if !ok {
			t.Fatalf("offset %#x not mapped", off)
		}
		out[va] = syms.Frames(va)
	}
	if len(out) == 0 {
		t.Fatal("no addresses")
	}
	return out
}

// A recording hands over at most maxFillFiles files, those of the most
// addresses, most first; the others are closed.
func TestSymbolFillBound(t *testing.T) {
	s := newSymbolizer()
	var all []*fillFile
	for i := range maxFillFiles + 5 {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		f := &fillFile{key: fmt.Sprint(i), elf: r, lines: w, addrs: (i * 7) % (maxFillFiles + 5)}
		all = append(all, f)
		s.addFill(f)
	}
	fill := s.takeFill(openCache(t), 0)
	defer fill.Close()
	if fill.Files() != maxFillFiles {
		t.Fatalf("%d files handed over, want %d", fill.Files(), maxFillFiles)
	}
	for i, f := range fill.files {
		if f.addrs != maxFillFiles+4-i {
			t.Errorf("file %d of %d addresses, want %d", i, f.addrs, maxFillFiles+4-i)
		}
	}
	closed := 0
	for _, f := range all {
		if _, err := f.elf.Stat(); err != nil {
			closed++
		}
	}
	if closed != 5 {
		t.Errorf("%d files closed, want the 5 of the fewest addresses", closed)
	}
}

// The filler runs in /: a cache given by a relative path is handed over
// by its absolute one.
func TestSymbolFillRelativeCache(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	c, err := symcache.Open("rel", symcache.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	s := newSymbolizer()
	s.addFill(&fillFile{elf: r, lines: w, addrs: 1})
	fill := s.takeFill(c, 0)
	defer fill.Close()
	if want := filepath.Join(dir, "rel"); fill.dir != want {
		t.Errorf("cache handed over as %q, want %q", fill.dir, want)
	}
}

// A filler past its budget gives up, exits and leaves the entry to the
// next recording: at idle priority on a busy machine it could otherwise
// hold the fill lock and its memory for many minutes.
func TestSymbolFillBudget(t *testing.T) {
	path, id, _ := cachedImage(t)
	c := openCache(t)
	_, fill := bundleForFill(t, c, path, id, 1<<20, funcOffsets(t, path, 1, "leaf_fn"))
	if fill.Files() != 1 {
		t.Fatalf("the bundle left %d files to fill, want 1", fill.Files())
	}
	fill.budget = time.Nanosecond
	log := runFill(t, c, fill)
	if !strings.Contains(log, "gave up after 1ns, its budget") {
		t.Errorf("fill log:\n%s\nwant it to say it gave up", log)
	}
	if e, _ := c.Get(symcache.Key(id, nil)); e == nil || len(e.Covered) != 0 {
		t.Errorf("entry %v after a filler out of budget; want it not filled", e)
	}
	// The next recording of a function not cached hands it over again,
	// and a filler with the default budget fills it.
	_, fill = bundleForFill(t, c, path, id, 1<<20, funcOffsets(t, path, 1, "mid_fn"))
	if fill.Files() != 1 {
		t.Fatalf("the next bundle left %d files to fill, want 1", fill.Files())
	}
	log = runFill(t, c, fill)
	if e, _ := c.Get(symcache.Key(id, nil)); e == nil || len(e.Covered) == 0 {
		t.Errorf("entry not filled by a filler with the default budget; log:\n%s", log)
	}
}
