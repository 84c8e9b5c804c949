package perf

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"nsprof/internal/testutils"
	"nsprof/internal/unix"
)

// requirePerf fails or skips a test whose perf_event_open failed for lack
// of privileges, through testutils.RequireCI: in CI every capability must
// be present.
func requirePerf(tb testing.TB, err error) {
	tb.Helper()
	if err == nil {
		return
	}
	if errors.Is(err, os.ErrPermission) || errors.Is(err, unix.ENOSYS) {
		testutils.RequireCI(tb, "perf_event_open not permitted: %v", err)
	}
	tb.Fatal(err)
}

var busyOnce struct {
	sync.Once
	dir  string
	path string
	err  error
}

// busyBinary builds testdata/busy.c with gcc once per test binary.
func busyBinary(tb testing.TB) string {
	tb.Helper()
	busyOnce.Do(func() {
		gcc, err := exec.LookPath("gcc")
		if err != nil {
			busyOnce.err = err
			return
		}
		busyOnce.dir, busyOnce.err = os.MkdirTemp("", "perf-busy-")
		if busyOnce.err != nil {
			return
		}
		busyOnce.path = filepath.Join(busyOnce.dir, "busy")
		out, err := exec.Command(gcc, "-O1", "-g", "-fno-omit-frame-pointer", "-pthread",
			"-Wl,--build-id", "-o", busyOnce.path, "testdata/busy.c").CombinedOutput()
		if err != nil {
			busyOnce.err = errors.New(strings.TrimSpace(string(out)))
		}
	})
	if busyOnce.err != nil {
		testutils.RequireCI(tb, "build busy (apt-get install gcc): %v", busyOnce.err)
	}
	return busyOnce.path
}
