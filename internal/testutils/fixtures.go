package testutils

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
)

// Fixture flags: frame pointers kept, nothing inlined, so call chains are
// the ones written in the sources. GCC 12 still gives leaf functions no
// frame, whatever -mno-omit-leaf-frame-pointer says, so fixtures keep their
// hot code out of leaf functions.
var fixtureCFLAGS = []string{"-O1", "-g", "-fno-omit-frame-pointer", "-fno-inline", "-fno-optimize-sibling-calls", "-pthread"}

var fixtureMu sync.Mutex

// FixtureDir returns the directory holding the C fixture sources.
func FixtureDir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "fixtures")
}

// BuildFixture compiles fixtures/<name>.c with gcc (plus extra flags, e.g.
// pkg-config output) and returns the binary's path. Builds are cached in
// the user cache dir by a hash of source and flags. Without gcc the test
// is skipped, or fails in CI.
func BuildFixture(t testing.TB, name string, extra ...string) string {
	t.Helper()
	return BuildC(t, filepath.Join(FixtureDir(), name+".c"), extra...)
}

// BuildC compiles the C program at src with gcc and the fixture flags plus
// extra, caching the binary by a hash of source and flags.
func BuildC(t testing.TB, src string, extra ...string) string {
	t.Helper()
	gcc, err := exec.LookPath("gcc")
	if err != nil {
		RequireCI(t, "gcc not found (apt-get install gcc): %v", err)
	}
	name := strings.TrimSuffix(filepath.Base(src), ".c")
	code, err := os.ReadFile(src)
	if err != nil {
		t.Fatalf("build %s: %v", src, err)
	}
	args := append(append([]string{}, fixtureCFLAGS...), extra...)
	h := sha256.New()
	h.Write(code)
	// Headers next to the source are part of what is built.
	if hs, _ := filepath.Glob(filepath.Join(filepath.Dir(src), "*.h")); len(hs) > 0 {
		for _, hf := range hs {
			b, _ := os.ReadFile(hf)
			h.Write(b)
		}
		args = append(args, "-I"+filepath.Dir(src))
	}
	h.Write([]byte(strings.Join(args, "\x00")))
	sum := hex.EncodeToString(h.Sum(nil))[:16]
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	dir := filepath.Join(cache, "nsprof-fixtures")
	out := filepath.Join(dir, name+"-"+sum)
	fixtureMu.Lock()
	defer fixtureMu.Unlock()
	if _, err := os.Stat(out); err == nil {
		return out
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	tmp := out + ".tmp"
	cmd := exec.Command(gcc, append(append([]string{"-o", tmp, src}, args...), "-lpthread")...)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build fixture %s: %v\n%s", name, err, b)
	}
	if err := os.Rename(tmp, out); err != nil {
		t.Fatal(err)
	}
	return out
}

// PkgConfig returns the compiler and linker flags of a pkg-config package,
// skipping the test (failing in CI) when it is not installed.
func PkgConfig(t testing.TB, pkg, debianPackage string) []string {
	t.Helper()
	out, err := exec.Command("pkg-config", "--cflags", "--libs", pkg).Output()
	if err != nil {
		RequireCI(t, "pkg-config %s failed (apt-get install %s): %v", pkg, debianPackage, err)
	}
	return strings.Fields(string(out))
}
