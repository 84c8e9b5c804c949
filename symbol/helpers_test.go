package symbol

import (
	"debug/elf"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"nsprof/internal/testutils"
)

// fixtureLib builds testdata/fixture.c as a shared library (with .symtab
// and DWARF) and returns a private copy, dir/libfixture.so.
func fixtureLib(t *testing.T, dir string) string {
	t.Helper()
	src := testutils.BuildC(t, filepath.Join("testdata", "fixture.c"), "-shared", "-fPIC", "-Wl,--build-id=sha1")
	dst := filepath.Join(dir, "libfixture.so")
	copyFile(t, src, dst)
	return dst
}

func copyFile(t *testing.T, src, dst string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		t.Fatal(err)
	}
	in, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}

// run runs a tool, failing the test with its output if it fails.
func run(t testing.TB, tool string, args ...string) string {
	t.Helper()
	p := testutils.LookPathOrSkip(t, tool)
	out, err := exec.Command(p, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", tool, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// stripAll writes lib without .symtab and debug sections to out.
func stripAll(t *testing.T, lib, out string) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		t.Fatal(err)
	}
	run(t, "objcopy", "--strip-all", lib, out)
	return out
}

// keepDebug writes the separate debug file of lib to out.
func keepDebug(t *testing.T, lib, out string) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		t.Fatal(err)
	}
	run(t, "objcopy", "--only-keep-debug", lib, out)
	return out
}

// addDebugLink adds a .gnu_debuglink to lib naming debug (whose CRC objcopy
// computes).
func addDebugLink(t *testing.T, lib, debug string) {
	t.Helper()
	run(t, "objcopy", "--add-gnu-debuglink="+debug, lib)
}

// openFile opens path with [Open], closing it at the end of the test.
func openFile(t testing.TB, path string) *File {
	t.Helper()
	f, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// symAddrs reads the addresses of function symbols from path's .symtab
// with debug/elf directly, as the expectation of the tests.
func symAddrs(t testing.TB, path string) map[string]uint64 {
	t.Helper()
	ef, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer ef.Close()
	syms, err := ef.Symbols()
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]uint64{}
	for _, s := range syms {
		if elf.ST_TYPE(s.Info) == elf.STT_FUNC && s.Value != 0 {
			m[s.Name] = s.Value
		}
	}
	return m
}

// lookuper is what [Table] and [Symbols] have in common.
type lookuper interface {
	Lookup(uint64) (Symbol, bool)
}

// wantNames checks that each name in want is found at its address (plus 1,
// inside the function) in l, and each name in absent is not.
func wantNames(t *testing.T, l lookuper, addrs map[string]uint64, want, absent []string) {
	t.Helper()
	for _, n := range want {
		a, ok := addrs[n]
		if !ok {
			t.Fatalf("fixture has no symbol %s", n)
		}
		s, ok := l.Lookup(a + 1)
		if !ok || s.Name != n {
			t.Errorf("Lookup(%s+1 = %#x) = %q, %v; want %q", n, a+1, s.Name, ok, n)
		}
	}
	for _, n := range absent {
		a := addrs[n]
		if s, ok := l.Lookup(a + 1); ok && s.Name == n {
			t.Errorf("Lookup(%s+1 = %#x) = %q; want it not found", n, a+1, s.Name)
		}
	}
}

var (
	exported = []string{"fixture_leaf", "fixture_middle", "fixture_outer"}
	all      = append([]string{"fixture_static"}, exported...)
)
