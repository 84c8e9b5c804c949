//go:build linux

package e2e

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"nsprof/internal/testutils"
	"nsprof/internal/testutils/containers"
)

// dwzHeader is shared by the two programs of TestDWZInlineNames: dwz -m
// moves the DIEs of its inlined function, alike in both, into their
// supplementary file.
const dwzHeader = `#include <stdlib.h>
#include <time.h>
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
	bin := buildDWZProgram(t, dir, filepath.Join(dir, "common.debug"), "")
	cache := filepath.Join(dir, "symcache")
	for i, cacheArgs := range [][]string{{"--no-symbol-cache"}, {"--symbol-cache", cache}, {"--symbol-cache", cache}} {
		capture := filepath.Join(dir, "dwz.syscap")
		args := append([]string{"record", "-f", "-o", capture, "--no-cpu", "--no-memory", "--no-disk", "--no-network"}, cacheArgs...)
		nsprof(t, append(args, "--", bin)...)
		r := reportJSON(t, capture, "--comm", "^a$")
		self, all := selfByFunction(r)
		if all < 200 || self["dwz_inlined_kernel"]*10 < all*9 {
			t.Errorf("recording %d (%v): dwz_inlined_kernel has %d of the program's %d samples, want 90%%: %v", i+1, cacheArgs, self["dwz_inlined_kernel"], all, self)
		}
	}
}

// buildDWZProgram builds, in dir, the stripped program a (gcc given
// cflags too) with a .gnu_debuglink to a.debug, whose DWARF dwz -m shared
// with another program's in the supplementary file common (a host path),
// its link naming it linkName (common when empty); it returns a's path.
// a spins in dwz_outer for its argument's seconds (1 without).
func buildDWZProgram(t *testing.T, dir, common, linkName string, cflags ...string) string {
	t.Helper()
	return testutils.BuildDWZ(t, dir, testutils.DWZOptions{
		Header: dwzHeader,
		MainA:  "int main(int argc, char **argv) { return dwz_spin(argc > 1 ? atoi(argv[1]) : 1) == 0; }\n",
		MainB:  "int main(void) { return dwz_spin(0) < 0; }\n",
		CFlags: append([]string{"-fno-omit-frame-pointer"}, cflags...),
		Common: common,
		Link:   linkName,
	}).Bin
}

// TestDWZInContainer records a process in a pivot_root container whose
// debug file links to its supplementary file by a path that exists only
// inside the container (/opt/dwz/common.debug): it is found through the
// process's root, and the inlined function is named.
func TestDWZInContainer(t *testing.T) {
	testutils.RequireRoot(t, "pivot_root containers need root")
	const inside = "/opt/dwz"
	if _, err := os.Stat(filepath.Join(inside, "common.debug")); err == nil {
		t.Fatalf("%s/common.debug exists on the host: the test needs it inside the container only", inside)
	}
	root := t.TempDir()
	dir := filepath.Join(root, inside)
	for _, d := range []string{dir, filepath.Join(root, "proc"), filepath.Join(root, "tmp")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	buildDWZProgram(t, dir, filepath.Join(dir, "common.debug"), filepath.Join(inside, "common.debug"), "-static")
	pid := containers.StartPivotIn(t, root, filepath.Join(inside, "a"), "600")
	capture := recordPID(t, pid, 2)
	r := reportJSON(t, capture, "--pid", strconv.Itoa(pid))
	self, all := selfByFunction(r)
	if all < 200 || self["dwz_inlined_kernel"]*10 < all*9 {
		t.Errorf("dwz_inlined_kernel has %d of the process's %d samples, want 90%%: %v", self["dwz_inlined_kernel"], all, self)
	}
}

// selfByFunction returns each function's self samples in r, over all its
// groups, and their sum.
func selfByFunction(r report) (self map[string]int, all int) {
	self = map[string]int{}
	for _, g := range r.Groups {
		for _, f := range g.Functions {
			self[f.Name] += f.Self
			all += f.Self
		}
	}
	return self, all
}
