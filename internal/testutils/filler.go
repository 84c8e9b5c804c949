package testutils

import (
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// fillerStarted matches what nsprof record says of the symbol cache
// filler it starts in the background.
var fillerStarted = regexp.MustCompile(`filling the entries of (\d+) files whole in the background \(pid (\d+),`)

// FillerStarted returns the pid of the symbol cache filler nsprof
// record's output says it started, and the number of files handed to
// it; 0, 0 when it started none.
func FillerStarted(output string) (pid, files int) {
	m := fillerStarted.FindStringSubmatch(output)
	if m == nil {
		return 0, 0
	}
	pid, _ = strconv.Atoi(m[2])
	files, _ = strconv.Atoi(m[1])
	return pid, files
}

// WaitFiller waits, up to limit, until the symbol cache filler nsprof
// record's output says it started, if any, is gone (or a zombie). It
// runs at idle priority: on a machine kept busy by other work it may
// wait long for a CPU. It is not a child of the test, so it cannot be
// waited for.
func WaitFiller(t testing.TB, output string, limit time.Duration) {
	t.Helper()
	pid, _ := FillerStarted(output)
	if pid == 0 {
		return
	}
	if !waitGone(pid, limit) {
		t.Fatalf("symbol cache filler %d still running after %v", pid, limit)
	}
}

// StopFiller kills the symbol cache filler nsprof record's output says
// it started, if any, and waits until it is gone: it writes into the
// cache directory, which a test's TempDir cleanup would find not empty,
// and may wait long for a CPU at its idle priority. What it wrote is
// whole (entries are renamed into place).
func StopFiller(t testing.TB, output string) {
	t.Helper()
	pid, _ := FillerStarted(output)
	if pid == 0 {
		return
	}
	syscall.Kill(pid, syscall.SIGKILL)
	if !waitGone(pid, 30*time.Second) {
		t.Fatalf("symbol cache filler %d still there 30 s after SIGKILL", pid)
	}
}

// waitGone reports whether process pid is gone (or a zombie) within limit.
func waitGone(pid int, limit time.Duration) bool {
	stat := fmt.Sprintf("/proc/%d/stat", pid)
	for end := time.Now().Add(limit); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		b, err := os.ReadFile(stat)
		if err != nil {
			return true
		}
		if i := strings.LastIndexByte(string(b), ')'); i > 0 && strings.HasPrefix(string(b[i:]), ") Z") {
			return true
		}
	}
	return false
}
