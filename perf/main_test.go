package perf

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// TestMain fails the run if a test leaked a perf event fd.
func TestMain(m *testing.M) {
	code := m.Run()
	if busyOnce.dir != "" {
		os.RemoveAll(busyOnce.dir)
	}
	if n := perfFDs(); code == 0 && n > 0 {
		fmt.Fprintf(os.Stderr, "leaked %d perf event fds\n", n)
		code = 99
	}
	os.Exit(code)
}

// perfFDs counts this process's open perf event fds.
func perfFDs() int {
	ents, _ := os.ReadDir("/proc/self/fd")
	n := 0
	for _, e := range ents {
		if l, err := os.Readlink(filepath.Join("/proc/self/fd", e.Name())); err == nil && l == "anon_inode:[perf_event]" {
			n++
		}
	}
	return n
}
