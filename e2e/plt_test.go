package e2e

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// A stripped program that spends much of its time jumping through the PLT
// (testdata/pltloop.c calls labs in a loop) has those samples named
// labs@plt in its own DSO, as perf names them, though no symbol table of the
// program survives.
func TestPLTNamed(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "pltloop")
	tool(t, "gcc", "-O2", "-fno-builtin", "-o", bin+".full", testdata("pltloop.c"))
	tool(t, "objcopy", "--strip-all", bin+".full", bin)
	if hasSymtab(t, bin) {
		t.Fatal("stripped fixture has .symtab")
	}
	out := filepath.Join(t.TempDir(), "capture.syscap")
	b, err := exec.Command(nsprofBin, "record", "-o", out, "--no-cpu", "--no-memory", "--no-disk", "--no-network",
		"--", bin, "1").CombinedOutput()
	if err != nil {
		t.Fatalf("nsprof record: %v\n%s", err, b)
	}
	r := reportJSON(t, out)
	if len(r.Groups) != 1 || r.Groups[0].Samples == 0 {
		t.Fatalf("report: %+v", r.Groups)
	}
	g := r.Groups[0]
	var plt int
	var names []string
	for _, f := range g.Functions {
		names = append(names, fmt.Sprintf("%s[%s](%d)", f.Name, f.DSO, f.Self))
		if f.Name == "labs@plt" && f.DSO == "pltloop" {
			plt += f.Self
		}
	}
	// Measured: 15% of the samples (168 of 1103 in 2 s); the PLT jump
	// is one of about eight instructions per iteration.
	if plt*50 < g.Samples {
		t.Errorf("labs@plt self %d of %d samples, want at least 2%%; functions: %s", plt, g.Samples, strings.Join(names, " "))
	}
}
