package testutils

import (
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
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

// WaitFiller waits until the symbol cache filler nsprof record's output
// says it started, if any, is gone (or a zombie): it writes into the
// cache directory, which a test's TempDir cleanup would find not empty.
// It is not a child of the test, so it cannot be waited for.
func WaitFiller(t testing.TB, output string) {
	t.Helper()
	pid, _ := FillerStarted(output)
	if pid == 0 {
		return
	}
	stat := fmt.Sprintf("/proc/%d/stat", pid)
	for end := time.Now().Add(2 * time.Minute); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		b, err := os.ReadFile(stat)
		if err != nil {
			return
		}
		if i := strings.LastIndexByte(string(b), ')'); i > 0 && strings.HasPrefix(string(b[i:]), ") Z") {
			return
		}
	}
	t.Fatalf("symbol cache filler %d still running after 2 minutes", pid)
}
