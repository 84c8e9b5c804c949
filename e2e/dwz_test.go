//go:build linux

package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// dwzHeader is shared by the two programs of TestDWZInlineNames: dwz -m
// moves the DIEs of its inlined function, alike in both, into their
// supplementary file.
const dwzHeader = `#include <time.h>
static volatile unsigned long dwz_sink;
static inline __attribute__((always_inline)) void dwz_inlined_kernel(int n) { for (int i = 0; i < n; i++) dwz_sink += (unsigned long)i * i; }
__attribute__((noinline)) static void dwz_outer(int n) { dwz_inlined_kernel(n); }
static int dwz_spin(int secs) { struct timespec s, e; clock_gettime(CLOCK_MONOTONIC, &s); int k = 0; do { dwz_outer(100000); k++; clock_gettime(CLOCK_MONOTONIC, &e); } while ((e.tv_sec - s.tv_sec) * 1000000000L + (e.tv_nsec - s.tv_nsec) < secs * 1000000000L); return k; }
`

// TestDWZInlineNames records a program whose debug file dwz -m made, as
// Debian's and Fedora's debug packages are: the function inlined into
// dwz_outer is named from the supplementary file (without it, its time
// was charged to a second dwz_outer frame inlined in the first), in a
// recording without the symbol cache and in two with one, the second
// answered from the cache.
func TestDWZInlineNames(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "dwz.h"), []byte(dwzHeader), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, main := range map[string]string{
		"a": "int main(void) { return dwz_spin(1) == 0; }\n",
		"b": "int main(void) { return dwz_spin(0) < 0; }\n",
	} {
		src := filepath.Join(dir, name+".c")
		if err := os.WriteFile(src, []byte("#include \"dwz.h\"\n"+main), 0o644); err != nil {
			t.Fatal(err)
		}
		tool(t, "gcc", "-O2", "-g", "-fno-omit-frame-pointer", "-o", filepath.Join(dir, name+".full"), src)
		tool(t, "objcopy", "--only-keep-debug", filepath.Join(dir, name+".full"), filepath.Join(dir, name+".debug"))
	}
	common := filepath.Join(dir, "common.debug")
	tool(t, "dwz", "-m", common, "-M", common, filepath.Join(dir, "a.debug"), filepath.Join(dir, "b.debug"))
	if info := tool(t, "readelf", "--debug-dump=info", filepath.Join(dir, "a.debug")); !strings.Contains(string(info), "DW_AT_abstract_origin: <alt") {
		t.Fatal("dwz left no abstract origin in the supplementary file")
	}
	bin := filepath.Join(dir, "a")
	tool(t, "strip", "-o", bin, filepath.Join(dir, "a.full"))
	tool(t, "objcopy", "--add-gnu-debuglink="+filepath.Join(dir, "a.debug"), bin)

	cache := filepath.Join(dir, "symcache")
	for i, cacheArgs := range [][]string{{"--no-symbol-cache"}, {"--symbol-cache", cache}, {"--symbol-cache", cache}} {
		capture := filepath.Join(dir, "dwz.syscap")
		args := append([]string{"record", "-f", "-o", capture, "--no-cpu", "--no-memory", "--no-disk", "--no-network"}, cacheArgs...)
		nsprof(t, append(args, "--", bin)...)
		r := reportJSON(t, capture, "--comm", "^a$")
		self := map[string]int{}
		all := 0
		for _, g := range r.Groups {
			for _, f := range g.Functions {
				self[f.Name] += f.Self
				all += f.Self
			}
		}
		if all < 200 || self["dwz_inlined_kernel"]*10 < all*9 {
			t.Errorf("recording %d (%v): dwz_inlined_kernel has %d of the program's %d samples, want 90%%: %v", i+1, cacheArgs, self["dwz_inlined_kernel"], all, self)
		}
	}
}
