package testutils

import (
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// SysprofReadAll reads the capture at path with Sysprof 3.46's own reader
// (libsysprof-capture-4, through capture/testdata/interop/read-all.c) and
// returns one line per frame in capture.Dumper's format and the final
// "END frames=N offset=O ok=0|1" line.
func SysprofReadAll(t testing.TB, path string) (lines []string, end string) {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	src := filepath.Join(filepath.Dir(file), "..", "..", "capture", "testdata", "interop", "read-all.c")
	bin := BuildC(t, src, PkgConfig(t, "sysprof-capture-4", "libsysprof-4-dev")...)
	out, err := exec.Command(bin, path).Output()
	if err != nil {
		t.Fatalf("read-all %s: %v", path, err)
	}
	all := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	if len(all) == 0 || !strings.HasPrefix(all[len(all)-1], "END ") {
		t.Fatalf("read-all %s: no END line in output", path)
	}
	return all[:len(all)-1], all[len(all)-1]
}
