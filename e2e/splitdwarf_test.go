//go:build linux

package e2e

import (
	"os"
	"path/filepath"
	"testing"
)

// TestSplitDWARFInlineNames records a program built with -gsplit-dwarf:
// its functions and inlined calls are in a .dwo file beside it, which
// the recording reads, so the function inlined into split_outer has its
// frame (as in a build without -gsplit-dwarf), its time not charged to
// split_outer itself.
func TestSplitDWARFInlineNames(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "prog.c")
	const prog = `#include <stdlib.h>
#include <time.h>
static volatile unsigned long split_sink;
static inline __attribute__((always_inline)) void split_inlined(int n) { for (int i = 0; i < n; i++) split_sink += (unsigned long)i * i; }
__attribute__((noinline)) void split_outer(int n) { split_inlined(n); }
int main(int argc, char **argv) {
	struct timespec s, e;
	clock_gettime(CLOCK_MONOTONIC, &s);
	do {
		split_outer(100000);
		clock_gettime(CLOCK_MONOTONIC, &e);
	} while ((e.tv_sec - s.tv_sec) * 1000000000L + (e.tv_nsec - s.tv_nsec) < 1000000000L);
	return 0;
}
`
	if err := os.WriteFile(src, []byte(prog), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "prog")
	tool(t, "gcc", "-O2", "-g", "-gdwarf-5", "-gsplit-dwarf", "-fno-omit-frame-pointer", "-o", bin, src)
	if dwos, _ := filepath.Glob(filepath.Join(dir, "*.dwo")); len(dwos) != 1 {
		t.Fatalf("gcc -gsplit-dwarf wrote .dwo files %v, want one", dwos)
	}
	capture := filepath.Join(dir, "split.syscap")
	nsprof(t, "record", "-o", capture, "--no-symbol-cache", "--no-cpu", "--no-memory", "--no-disk", "--no-network", "--", bin)
	self, all := selfByFunction(reportJSON(t, capture, "--comm", "^prog$"))
	if all < 200 || self["split_inlined"]*10 < all*9 {
		t.Errorf("split_inlined has %d of the program's %d samples, want 90%%: %v", self["split_inlined"], all, self)
	}
}
