package e2e

import (
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"nsprof/internal/testutils"
)

// sysprofNames names the sampled addresses of a capture with Sysprof
// 3.46's own resolver for bundled symbols (testdata/sysprof-names.c on
// libsysprof-4) and returns, per pid, the frames counted per function.
func sysprofNames(t *testing.T, capture string) map[int]map[string]int {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	src := filepath.Join(filepath.Dir(file), "testdata", "sysprof-names.c")
	bin := testutils.BuildC(t, src, testutils.PkgConfig(t, "sysprof-4", "libsysprof-4-dev")...)
	out, err := exec.Command(bin, capture).Output()
	if err != nil {
		t.Fatalf("sysprof-names %s: %v", capture, err)
	}
	names := make(map[int]map[string]int)
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Split(line, "\t")
		if len(f) != 4 {
			continue
		}
		pid, err1 := strconv.Atoi(f[0])
		n, err2 := strconv.Atoi(f[1])
		if err1 != nil || err2 != nil {
			t.Fatalf("sysprof-names: bad line %q", line)
		}
		if names[pid] == nil {
			names[pid] = make(map[string]int)
		}
		names[pid][f[2]] += n
	}
	return names
}

// checkSysprofNames checks that Sysprof's resolver sees the fixture's
// call chain in process pid, and no decoy function anywhere.
func checkSysprofNames(t *testing.T, capture string, pid int) {
	t.Helper()
	names := sysprofNames(t, capture)
	for p, fns := range names {
		for fn := range fns {
			if strings.HasPrefix(fn, "decoy_") {
				t.Errorf("Sysprof names %s in process %d: the host decoy's function", fn, p)
			}
		}
	}
	for _, fn := range hotChain {
		if names[pid][fn] == 0 {
			t.Errorf("Sysprof's resolver does not name %s in process %d from the bundle; it names %v", fn, pid, names[pid])
		}
	}
}
