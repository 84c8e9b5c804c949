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
// samples wait for the description, and are unwound through it when the
// recording ends; "late-exit", with the recording going on after the
// exit (they are unwound a second after it, record's TestRetryJIT
// checks when); "late-exec", at the exec that follows, which ends its
// JIT's state (the code of an image an exec replaced goes unnamed, as
// before: the bundle names a process's JIT code from its last image's
// dumps).
func TestJITDumpUnwindInfo(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "jittramp")
	tool(t, "gcc", "-O1", "-g", "-fomit-frame-pointer", "-o", bin, testdata("jittramp.c"))
	for _, c := range []struct {
		name string
		argv []string
	}{
		{"early", []string{bin, "800", "early"}},
		{"late", []string{bin, "800", "late"}},
		{"late-exit", []string{"sh", "-c", bin + " 800 late; sleep 2"}},
		{"late-exec", []string{bin, "800", "late-exec"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			out := filepath.Join(dir, c.name+".syscap")
			args := append([]string{"record", "-v", "--call-graph", "dwarf", "-o", out, "--no-cpu", "--no-memory", "--no-disk", "--no-network", "--"}, c.argv...)
			log, err := exec.Command(nsprofBin, args...).CombinedOutput()
			if err != nil {
				t.Fatalf("nsprof record: %v\n%s", err, log)
			}
			checkJITUnwound(t, out, c.name != "late-exec")
			if c.name == "late" {
				checkSysprofJIT(t, out)
			}
			late := c.name != "early"
			if waited := strings.Contains(string(log), "stacks waited for their jitdumps"); waited != late {
				t.Errorf("the log says stacks waited: %v, want %v:\n%s", waited, late, log)
			}
		})
	}
}

// checkJITUnwound checks that nearly all of the fixture's stacks in
// capture out read main, run, the trampoline (by its name when named is
// set), work.
func checkJITUnwound(t *testing.T, out string, named bool) {
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
	trampoline := "[unknown in [anon]] [anon]"
	if named {
		trampoline = "jit::trampoline JIT"
	}
	for _, want := range []string{"work jittramp", trampoline, "run jittramp", "main jittramp"} {
		if total[want]*10 < n*9 {
			t.Errorf("%s: total %d of %d samples, want nearly all; functions: %s", want, total[want], n, strings.Join(names, " "))
		}
	}
}

// checkSysprofJIT checks that Sysprof 3.46's reader and resolver see the
// fixture's whole stacks in capture out, written after the frames that
// followed them in time: nearly every frame of work has run and main
// with it, and the trampoline is named.
func checkSysprofJIT(t *testing.T, out string) {
	t.Helper()
	for pid, fns := range sysprofNames(t, out) {
		work := fns["work"]
		if work < 100 {
			continue
		}
		for _, fn := range []string{"run", "main", "jit::trampoline"} {
			if fns[fn]*10 < work*9 {
				t.Errorf("Sysprof: process %d: %s in %d frames, work in %d; want nearly as many: %v", pid, fn, fns[fn], work, fns)
			}
		}
		return
	}
	t.Error("Sysprof's reader finds no process with the fixture's work")
}
