package main

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"nsprof/capture"
	"nsprof/internal/testutils"
)

// TestRecordBesidePerf runs perf record and perf report while `nsprof
// record -a --no-mmap-build-ids` records: both must succeed (with nsprof's
// default build-id MMAP2 records, the kernel flags perf's MMAP2 records as
// carrying build-ids too, and perf 6.1 aborts: "assertion failed at
// util/build-id.c:1010"). nsprof's own mappings still get their build-ids,
// read from the files.
func TestRecordBesidePerf(t *testing.T) {
	perf, err := exec.LookPath("perf")
	if err != nil {
		testutils.RequireCI(t, "perf not found (apt-get install linux-perf): %v", err)
	}
	// No system-wide recording of another test package beside this one:
	// its build-id events would break perf whatever this one asks for.
	testutils.SystemWide(t, true)
	dir := t.TempDir()
	out := filepath.Join(dir, "n.syscap")
	cmd, stderr := nsprofProcess(t, "record", "-a", "--no-mmap-build-ids", "--no-cpu", "--no-disk", "--no-network", "--duration", "4", "-o", out)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1500 * time.Millisecond) // the events open
	data := filepath.Join(dir, "p.data")
	if b, err := exec.Command(perf, "record", "-q", "-o", data, "--", "/bin/sh", "-c", "ls / >/dev/null").CombinedOutput(); err != nil {
		t.Errorf("perf record beside nsprof: %v\n%s", err, b)
	} else if b, err := exec.Command(perf, "report", "-i", data, "--stdio").CombinedOutput(); err != nil {
		t.Errorf("perf report beside nsprof: %v\n%s", err, b)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("nsprof record: %v\n%s", err, stderr)
	}
	withID := 0
	for _, f := range readClean(t, out) {
		if m, ok := f.(*capture.Map); ok && m.BuildID != "" && strings.Contains(m.Filename, "libc.so") {
			withID++
		}
	}
	if withID == 0 {
		t.Errorf("no mapping of libc with its build-id in the capture")
	}
}
