//go:build linux

package e2e

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// Code a JIT made that keeps no frame pointer is unwound through from the
// call frame information its jitdump gave, read while recording: the
// fixture's trampoline is Python 3.13's -X perf_jit one, and its stacks
// read main, run, jit::trampoline, work, as `perf inject --jit` has
// them. Before, the frame-pointer walk the unwinder falls back on for
// anonymous memory ended every stack at the trampoline.
func TestJITDumpUnwindInfo(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "jittramp")
	tool(t, "gcc", "-O1", "-g", "-fomit-frame-pointer", "-o", bin, testdata("jittramp.c"))
	out := filepath.Join(dir, "capture.syscap")
	nsprof(t, "record", "--call-graph", "dwarf", "-o", out, "--no-cpu", "--no-memory", "--no-disk", "--no-network", "--", bin, "800")
	r := reportJSON(t, out)
	total := map[string]int{}
	var names []string
	for _, g := range r.Groups {
		for _, f := range g.Functions {
			total[f.Name+" "+f.DSO] += f.Total
			names = append(names, fmt.Sprintf("%s[%s](%d)", f.Name, f.DSO, f.Total))
		}
	}
	n := r.Capture.Samples
	for _, want := range []string{"work jittramp", "jit::trampoline JIT", "run jittramp", "main jittramp"} {
		if total[want]*10 < n*9 {
			t.Errorf("%s: total %d of %d samples, want nearly all; functions: %s", want, total[want], n, strings.Join(names, " "))
		}
	}
}
