//go:build linux

package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"nsprof/internal/testutils"
)

// A stripped Go program without cgo that signals itself: the return
// address of its signal frames, the start of the runtime's restorer, is
// named runtime.sigreturn__sigaction, not runtime.cgoSigtramp (the
// function before it, to which the line table gives the address
// before).
func TestGoSignalFrame(t *testing.T) {
	goTool := testutils.LookPathOrSkip(t, "go")
	bin := filepath.Join(t.TempDir(), "gosignal")
	cmd := exec.Command(goTool, "build", "-ldflags=-s -w", "-o", bin, testdata("gosignal/main.go"))
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, b)
	}
	if hasSymtab(t, bin) {
		t.Fatalf("%s has .symtab after -s", bin)
	}
	for _, mode := range []string{"fp", "dwarf"} {
		t.Run(mode, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "capture.syscap")
			nsprof(t, "record", "--call-graph", mode, "-o", out, "--no-cpu", "--no-memory", "--no-disk", "--no-network", "--", bin)
			total := map[string]int{}
			for _, g := range reportJSON(t, out).Groups {
				for _, f := range g.Functions {
					total[f.Name] += f.Total
				}
			}
			if total["runtime.sigtrampgo"] == 0 {
				t.Fatalf("no sample in the signal handler (runtime.sigtrampgo): %v", total)
			}
			if total["runtime.cgoSigtramp"] > 0 || total["runtime.sigreturn__sigaction"] == 0 {
				t.Errorf("signal frames: runtime.cgoSigtramp total %d, runtime.sigreturn__sigaction %d, want 0 and more (handler runtime.sigtrampgo %d)",
					total["runtime.cgoSigtramp"], total["runtime.sigreturn__sigaction"], total["runtime.sigtrampgo"])
			}
		})
	}
}
