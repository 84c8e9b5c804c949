//go:build linux

package e2e

import (
	"fmt"
	"os/exec"
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
//
// "late": the fixture describes its code only once it is done, as
// Python's buffered dump describes its last functions only at exit: the
// samples wait for the description, and are unwound through it then.
func TestJITDumpUnwindInfo(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "jittramp")
	tool(t, "gcc", "-O1", "-g", "-fomit-frame-pointer", "-o", bin, testdata("jittramp.c"))
	for _, when := range []string{"early", "late"} {
		t.Run(when, func(t *testing.T) {
			out := filepath.Join(dir, when+".syscap")
			log, err := exec.Command(nsprofBin, "record", "-v", "--call-graph", "dwarf", "-o", out, "--no-cpu", "--no-memory", "--no-disk", "--no-network", "--", bin, "800", when).CombinedOutput()
			if err != nil {
				t.Fatalf("nsprof record: %v\n%s", err, log)
			}
			checkJITUnwound(t, out)
			if waited := strings.Contains(string(log), "stacks waited for their jitdumps"); waited != (when == "late") {
				t.Errorf("the log says stacks waited: %v, want %v:\n%s", waited, when == "late", log)
			}
		})
	}
}

// checkJITUnwound checks that nearly all of the fixture's stacks in
// capture out read main, run, jit::trampoline, work.
func checkJITUnwound(t *testing.T, out string) {
	t.Helper()
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
