package testutils

import (
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// ResetPeakRSS collects garbage, resets the test process's peak RSS
// (VmHWM) to its RSS and returns the RSS, in kB. A kernel that cannot
// reset it fails the test under CI and skips it otherwise.
func ResetPeakRSS(t testing.TB) int {
	t.Helper()
	runtime.GC()
	// Writing 5 to clear_refs resets the peak RSS to the RSS.
	if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
		RequireCI(t, "peak RSS not resettable: %v", err)
	}
	return StatusKB(t, "VmRSS")
}

// StatusKB returns a field of /proc/self/status given in kB.
func StatusKB(t testing.TB, field string) int {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(b)) {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			var n int
			if _, err := fmt.Sscan(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), &n); err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatalf("no %s in /proc/self/status", field)
	return 0
}

// RewriteByPages writes the file at path again a page at a time, as a
// file read back from the disk would be in the page cache: a file just
// written whole can be held in folios of up to 2 MB, which a fault maps
// whole (Linux 6.18), whatever is let go between.
func RewriteByPages(t testing.TB, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	os.Remove(path)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	for p := range slices.Chunk(b, 4096) {
		if _, err := f.Write(p); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}
