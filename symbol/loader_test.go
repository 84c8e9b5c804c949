package symbol

import (
	"bytes"
	"encoding/hex"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"nsprof/internal/testutils"
)

// strippedWithDebug builds the fixture in dir, and returns the unstripped
// library, a stripped copy and its separate debug file (dir/name.debug),
// the stripped copy carrying a .gnu_debuglink to it when link is set.
func strippedWithDebug(t *testing.T, dir string, link bool) (lib, stripped, debug string) {
	t.Helper()
	lib = fixtureLib(t, t.TempDir())
	stripped = stripAll(t, lib, filepath.Join(dir, "libfixture.so"))
	debug = keepDebug(t, lib, filepath.Join(t.TempDir(), "libfixture.so.debug"))
	if link {
		addDebugLink(t, stripped, debug)
	}
	return lib, stripped, debug
}

func TestLoadOwnSymtab(t *testing.T) {
	lib := fixtureLib(t, t.TempDir())
	l := &Loader{DebugDirs: []string{t.TempDir()}}
	s, err := l.Load(openFile(t, lib), lib)
	if err != nil {
		t.Fatal(err)
	}
	if s.Source() != "symtab" {
		t.Errorf("Source = %q, want symtab", s.Source())
	}
	wantNames(t, s, symAddrs(t, lib), all, nil)
}

func TestLoadDebugLink(t *testing.T) {
	for _, where := range []string{"next", ".debug", "debugdir"} {
		t.Run(where, func(t *testing.T) {
			dir := t.TempDir()
			debugDir := t.TempDir()
			lib, stripped, debug := strippedWithDebug(t, dir, true)
			var dst string
			switch where {
			case "next":
				dst = filepath.Join(dir, "libfixture.so.debug")
			case ".debug":
				dst = filepath.Join(dir, ".debug", "libfixture.so.debug")
			case "debugdir":
				dst = filepath.Join(debugDir, dir, "libfixture.so.debug")
			}
			copyFile(t, debug, dst)
			l := &Loader{DebugDirs: []string{debugDir}}
			s, err := l.Load(openFile(t, stripped), stripped)
			if err != nil {
				t.Fatal(err)
			}
			if want := "debuglink:" + dst; s.Source() != want {
				t.Errorf("Source = %q, want %q", s.Source(), want)
			}
			wantNames(t, s, symAddrs(t, lib), all, nil)
		})
	}
}

func TestLoadDebugLinkWrongCRC(t *testing.T) {
	dir := t.TempDir()
	lib, stripped, debug := strippedWithDebug(t, dir, true)
	// Same name, same build-id, different bytes: the CRC must reject it.
	b, err := os.ReadFile(debug)
	if err != nil {
		t.Fatal(err)
	}
	b = append(b, 0)
	if err := os.WriteFile(filepath.Join(dir, "libfixture.so.debug"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	l := &Loader{DebugDirs: []string{t.TempDir()}}
	s, err := l.Load(openFile(t, stripped), stripped)
	if err != nil {
		t.Fatal(err)
	}
	if s.Source() != "dynsym" {
		t.Errorf("Source = %q, want dynsym (the debug file has the wrong CRC)", s.Source())
	}
	wantNames(t, s, symAddrs(t, lib), exported, []string{"fixture_static"})
}

func TestLoadBuildIDDir(t *testing.T) {
	dir := t.TempDir()
	debugDir := t.TempDir()
	lib, stripped, debug := strippedWithDebug(t, dir, false)
	obj := openFile(t, stripped)
	p := buildIDPath(debugDir, obj.BuildID())
	copyFile(t, debug, p)
	if !strings.Contains(p, "/.build-id/"+hex.EncodeToString(obj.BuildID()[:1])+"/") || !strings.HasSuffix(p, ".debug") {
		t.Fatalf("build-id path %s", p)
	}
	l := &Loader{DebugDirs: []string{debugDir}}
	s, err := l.Load(obj, stripped)
	if err != nil {
		t.Fatal(err)
	}
	if want := "build-id:" + p; s.Source() != want {
		t.Errorf("Source = %q, want %q", s.Source(), want)
	}
	wantNames(t, s, symAddrs(t, lib), all, nil)
}

func TestLoadBuildIDMismatch(t *testing.T) {
	dir := t.TempDir()
	debugDir := t.TempDir()
	lib, stripped, _ := strippedWithDebug(t, dir, false)
	obj := openFile(t, stripped)
	// The debug file of another build of the library, at this build's
	// build-id path: it must be rejected.
	other := testutils.BuildC(t, filepath.Join("testdata", "fixture.c"), "-shared", "-fPIC", "-Wl,--build-id=sha1", "-DOTHER_BUILD=1", "-O2")
	otherDebug := keepDebug(t, other, filepath.Join(t.TempDir(), "other.debug"))
	if bytes.Equal(openFile(t, otherDebug).BuildID(), obj.BuildID()) {
		t.Fatal("the two builds have the same build-id")
	}
	copyFile(t, otherDebug, buildIDPath(debugDir, obj.BuildID()))
	l := &Loader{DebugDirs: []string{debugDir}}
	s, err := l.Load(obj, stripped)
	if err != nil {
		t.Fatal(err)
	}
	if s.Source() != "dynsym" {
		t.Errorf("Source = %q, want dynsym (the debug file is of another build)", s.Source())
	}
	wantNames(t, s, symAddrs(t, lib), exported, []string{"fixture_static"})
}

func TestLoadRoots(t *testing.T) {
	// The object lives at /opt/app/libfixture.so inside a fake process
	// root; a debug file with the same build-id exists in the root's
	// /usr/lib/debug and in the "host" debug directory. The root's must
	// be found first; and with the root's removed, the host's.
	root := t.TempDir()
	hostDebug := t.TempDir()
	lib, stripped, debug := strippedWithDebug(t, filepath.Join(root, "opt", "app"), false)
	obj := openFile(t, stripped)
	inRoot := buildIDPath("/usr/lib/debug", obj.BuildID())
	copyFile(t, debug, filepath.Join(root, inRoot))
	copyFile(t, debug, buildIDPath(hostDebug, obj.BuildID()))

	// The host root is a second RootOpener over "/" so that the host's
	// debug directory can be named by its real path.
	l := &Loader{Roots: []Opener{RootOpener(root), HostOpener}, DebugDirs: []string{"/usr/lib/debug", hostDebug}}
	s, err := l.Load(obj, "/opt/app/libfixture.so")
	if err != nil {
		t.Fatal(err)
	}
	if want := "build-id:" + inRoot; s.Source() != want {
		t.Errorf("Source = %q, want %q (the process root's debug file)", s.Source(), want)
	}
	wantNames(t, s, symAddrs(t, lib), all, nil)

	if err := os.Remove(filepath.Join(root, inRoot)); err != nil {
		t.Fatal(err)
	}
	s, err = l.Load(obj, "/opt/app/libfixture.so")
	if err != nil {
		t.Fatal(err)
	}
	if want := "build-id:" + buildIDPath(hostDebug, obj.BuildID()); s.Source() != want {
		t.Errorf("Source = %q, want %q (the host's debug file)", s.Source(), want)
	}

	// A debuglink resolved inside the root: /opt/app/.debug/NAME.
	lib2, stripped2, debug2 := strippedWithDebug(t, filepath.Join(root, "opt", "app2"), true)
	copyFile(t, debug2, filepath.Join(root, "opt", "app2", ".debug", "libfixture.so.debug"))
	l = &Loader{Roots: []Opener{RootOpener(root)}, DebugDirs: []string{t.TempDir()}}
	s, err = l.Load(openFile(t, stripped2), "/opt/app2/libfixture.so")
	if err != nil {
		t.Fatal(err)
	}
	if want := "debuglink:/opt/app2/.debug/libfixture.so.debug"; s.Source() != want {
		t.Errorf("Source = %q, want %q", s.Source(), want)
	}
	wantNames(t, s, symAddrs(t, lib2), all, nil)
}

func TestLoadFlatpakDebugDir(t *testing.T) {
	root := t.TempDir()
	lib, stripped, debug := strippedWithDebug(t, filepath.Join(root, "app", "lib"), false)
	obj := openFile(t, stripped)
	p := buildIDPath("/app/lib/debug", obj.BuildID())
	copyFile(t, debug, filepath.Join(root, p))
	l := &Loader{Roots: []Opener{RootOpener(root)}}
	s, err := l.Load(obj, "/app/lib/libfixture.so")
	if err != nil {
		t.Fatal(err)
	}
	if want := "build-id:" + p; s.Source() != want {
		t.Errorf("Source = %q, want %q", s.Source(), want)
	}
	wantNames(t, s, symAddrs(t, lib), all, nil)
}

// miniDebugInfo adds a .gnu_debugdata section to stripped the way Fedora's
// find-debuginfo does: the function symbols .dynsym lacks, in a
// symbols-only ELF, compressed with xz.
func miniDebugInfo(t *testing.T, lib, stripped string) {
	t.Helper()
	dir := t.TempDir()
	names := func(args ...string) []string {
		var out []string
		for _, line := range strings.Split(run(t, "nm", append(args, "--format=posix", "--defined-only", lib)...), "\n") {
			f := strings.Fields(line)
			if len(f) >= 2 && (len(args) > 0 || f[1] == "T" || f[1] == "t") {
				out = append(out, f[0])
			}
		}
		sort.Strings(out)
		return out
	}
	dyn := map[string]bool{}
	for _, n := range names("-D") {
		dyn[n] = true
	}
	var keep []string
	for _, n := range names() {
		if !dyn[n] {
			keep = append(keep, n)
		}
	}
	keepFile := filepath.Join(dir, "keep_symbols")
	if err := os.WriteFile(keepFile, []byte(strings.Join(keep, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	debug := keepDebug(t, lib, filepath.Join(dir, "debug"))
	mini := filepath.Join(dir, "mini_debuginfo")
	run(t, "objcopy", "-S", "--remove-section", ".gdb_index", "--remove-section", ".comment", "--keep-symbols="+keepFile, debug, mini)
	run(t, "xz", "--keep", mini)
	run(t, "objcopy", "--add-section", ".gnu_debugdata="+mini+".xz", stripped)
}

func TestLoadMiniDebugInfo(t *testing.T) {
	dir := t.TempDir()
	lib := fixtureLib(t, t.TempDir())
	stripped := stripAll(t, lib, filepath.Join(dir, "libfixture.so"))
	miniDebugInfo(t, lib, stripped)
	obj := openFile(t, stripped)
	tab, err := obj.Symbols()
	if err != nil {
		t.Fatal(err)
	}
	if obj.symsFrom != "dynsym+minidebuginfo" {
		t.Errorf("Symbols from %q, want dynsym+minidebuginfo", obj.symsFrom)
	}
	wantNames(t, tab, symAddrs(t, lib), all, nil)

	l := &Loader{DebugDirs: []string{t.TempDir()}}
	s, err := l.Load(obj, stripped)
	if err != nil {
		t.Fatal(err)
	}
	if s.Source() != "minidebuginfo" {
		t.Errorf("Source = %q, want minidebuginfo", s.Source())
	}
	wantNames(t, s, symAddrs(t, lib), all, nil)
}

func TestLoadGoStripped(t *testing.T) {
	for _, mode := range []string{"exe", "pie"} {
		t.Run(mode, func(t *testing.T) {
			bin := buildGo(t, "gofixture", mode, "-s -w")
			obj := openFile(t, bin)
			if obj.hasSection(2) { // SHT_SYMTAB
				t.Fatal("-s left a .symtab")
			}
			l := &Loader{DebugDirs: []string{t.TempDir()}}
			s, err := l.Load(obj, bin)
			if err != nil {
				t.Fatal(err)
			}
			if s.Source() != "gopclntab" {
				t.Errorf("Source = %q, want gopclntab", s.Source())
			}
			found := 0
			for _, sym := range s.Table().All() {
				if sym.Name == "main.nsprofFixtureGoLeaf" || sym.Name == "main.nsprofFixtureGoMiddle" {
					found++
					if got, ok := s.Lookup(sym.Addr + sym.Size/2); !ok || got.Name != sym.Name {
						t.Errorf("Lookup(middle of %s) = %q, %v", sym.Name, got.Name, ok)
					}
				}
			}
			if found != 2 {
				t.Errorf("found %d of the 2 fixture functions among %d", found, s.Table().Len())
			}
			if _, ok := s.Lookup(0); ok {
				t.Error("Lookup(0) found a symbol")
			}
		})
	}
}

func TestLoadNoSymbols(t *testing.T) {
	// A stripped object file with data but no function at all.
	dir := t.TempDir()
	src := filepath.Join(dir, "empty.c")
	if err := os.WriteFile(src, []byte("int fixture_data = 1;\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	obj := filepath.Join(dir, "empty.o")
	run(t, "gcc", "-c", "-o", obj, src)
	run(t, "objcopy", "--strip-all", obj)
	l := &Loader{DebugDirs: []string{t.TempDir()}}
	_, err := l.Load(openFile(t, obj), obj)
	if err == nil {
		t.Fatal("Load of an object without symbols succeeded")
	}
	if !strings.Contains(err.Error(), ErrNoSymbols.Error()) {
		t.Errorf("error %v does not say %v", err, ErrNoSymbols)
	}
}

// TestOpenersDoNotWaitOnFIFO: a FIFO where a debug file is searched for
// (a directory the profiled process's user writes) is opened without
// waiting for a writer, and refused as not a regular file.
func TestOpenersDoNotWaitOnFIFO(t *testing.T) {
	dir := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(dir, "x.debug"), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, open := range map[string]Opener{
		"host": HostOpener,
		"root": RootOpener(dir),
	} {
		p := filepath.Join(dir, "x.debug")
		if name == "root" {
			p = "/x.debug"
		}
		done := make(chan error, 1)
		go func() {
			_, _, err := openDebugFile(&File{}, open, p, nil)
			done <- err
		}()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), "not a regular file") {
				t.Errorf("%s: %v, want not a regular file", name, err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: still waiting on the FIFO after 10 s", name)
		}
	}
}
