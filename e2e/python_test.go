//go:build linux

package e2e

import (
	"debug/elf"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"nsprof/internal/testutils"
)

// debianPython is Debian 12's interpreter, built with link-time
// optimization; its debug file comes with python3.11-dbg.
const debianPython = "/usr/bin/python3.11"

// cpuScript keeps the interpreter busy for about two seconds in the
// evaluation loop, integers, tuples, a small dictionary, lists and
// instances, calling into libc (through the PLT) seldom.
const cpuScript = `import time
def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)
class Point:
    def __init__(self, x, y):
        self.x, self.y = x, y
    def norm(self):
        return self.x * self.x + self.y * self.y
d = {}
end = time.monotonic() + 2
while time.monotonic() < end:
    for _ in range(400):
        fib(12)
        t = tuple(range(8))
        d["a"], d["b"] = t[1], t[2]
        d["c"] = d["a"] + d["b"]
        sq = [i * i for i in range(30)]
        p = Point(sum(sq), d["c"])
        p.norm()
        sq.reverse()
`

// requirePythonDebug checks that debianPython and its debug file (found
// by build-id, as nsprof looks for it) are installed.
func requirePythonDebug(t *testing.T) {
	t.Helper()
	f, err := elf.Open(debianPython)
	if err != nil {
		testutils.RequireCI(t, "%s: %v (apt-get install python3.11)", debianPython, err)
	}
	defer f.Close()
	s := f.Section(".note.gnu.build-id")
	if s == nil {
		t.Fatalf("%s has no build-id note", debianPython)
	}
	b, err := s.Data()
	if err != nil || len(b) < 16+20 {
		t.Fatalf("%s: build-id note: %v", debianPython, err)
	}
	id := hex.EncodeToString(b[16:])
	dbg := filepath.Join("/usr/lib/debug/.build-id", id[:2], id[2:]+".debug")
	if _, err := os.Stat(dbg); err != nil {
		testutils.RequireCI(t, "no debug file for %s: %v (apt-get install python3.11-dbg, of the installed python3.11's version)", debianPython, err)
	}
}

// TestPythonLTOInlineNames records Debian's python3.11, an LTO build whose
// inlined calls name their functions through references into other
// compilation units, running a CPU-bound script, twice: with the
// interpreter's debug file installed, every inlined call in the reports
// has its real name (none "[inlined]", none unnamed), the evaluation loop
// is there, and inlined functions do show as frames of their own. (A
// sample in a PLT stub, which no unit covers, has nsprof read the whole
// DWARF at once, the path that always named them: two recordings make one
// without such a sample likely.)
func TestPythonLTOInlineNames(t *testing.T) {
	requirePythonDebug(t)
	dir := t.TempDir()
	script := filepath.Join(dir, "cpu.py")
	if err := os.WriteFile(script, []byte(cpuScript), 0o644); err != nil {
		t.Fatal(err)
	}
	for run := range 2 {
		capPath := filepath.Join(dir, fmt.Sprintf("python%d.syscap", run))
		nsprof(t, "record", "-o", capPath, "-F", "3000", "--no-cpu", "--no-memory", "--no-disk", "--no-network", "--", debianPython, "-S", script)
		checkPythonReport(t, capPath)
	}
}

// checkPythonReport checks the report of a recording of cpuScript.
func checkPythonReport(t *testing.T, capPath string) {
	t.Helper()
	r := reportJSON(t, capPath)
	if n := r.Capture.Symbols["unnamed inlined"]; n > 0 {
		t.Errorf("%s: %d inlined calls unnamed (symbols %v)", capPath, n, r.Capture.Symbols)
	}
	names := map[string]int{}
	for _, g := range r.Groups {
		for _, f := range g.Functions {
			names[f.Name] += f.Self
			if f.Name == "[inlined]" {
				t.Errorf("%s: %s: function [inlined]: self %d, total %d samples", capPath, g.Key, f.Self, f.Total)
			}
		}
	}
	if names["_PyEval_EvalFrameDefault"] == 0 {
		t.Errorf("%s: no self samples in _PyEval_EvalFrameDefault; functions: %v", capPath, names)
	}
	// The inlined calls are frames of their own: functions --no-inline
	// does not show.
	flat := map[string]bool{}
	for _, g := range reportJSON(t, capPath, "--no-inline").Groups {
		for _, f := range g.Functions {
			flat[f.Name] = true
		}
	}
	var only []string
	for n := range names {
		if !flat[n] {
			only = append(only, n)
		}
	}
	slices.Sort(only)
	if len(only) == 0 {
		t.Errorf("%s: the report shows no inlined function that --no-inline does not", capPath)
	}
	t.Logf("%d samples; %d functions, %d only as inlined calls (%v); symbols %v", r.Capture.Samples, len(names), len(only), only[:min(len(only), 8)], r.Capture.Symbols)
}
