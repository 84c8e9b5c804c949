package testutils

import (
	"os/exec"
	"strings"
	"testing"
)

func TestFixturesBuildAndRun(t *testing.T) {
	out, err := exec.Command(BuildFixture(t, "callchain"), "0.1", "1").CombinedOutput()
	if err != nil || !strings.HasPrefix(string(out), "callchain done") {
		t.Fatalf("callchain: %v %s", err, out)
	}
	if out, err := exec.Command(BuildFixture(t, "syscalls"), "0.1").CombinedOutput(); err != nil {
		t.Fatalf("syscalls: %v %s", err, out)
	}
	p := BuildFixture(t, "tracefd-marks", PkgConfig(t, "sysprof-capture-4", "libsysprof-4-dev")...)
	cmd := exec.Command(p)
	cmd.Env = []string{"PATH=/usr/bin:/bin"}
	out, err = cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 {
		t.Fatalf("tracefd-marks without SYSPROF_TRACE_FD: %v %s", err, out)
	}
}
