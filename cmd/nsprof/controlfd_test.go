package main

import (
	"path/filepath"
	"strings"
	"testing"

	"nsprof/capture"
	"nsprof/internal/testutils"
	"nsprof/record"
)

// Sysprof's own allocation collector, preloaded into the command, asks
// for rings over SYSPROF_CONTROL_FD and fills them with ALLOCATION frames
// (its malloc and free hooks, with backtraces); nsprof serves the rings
// and copies the frames into the capture, as sysprof-cli --memprof does.
func TestSysprofMemprofThroughControlFD(t *testing.T) {
	if _, err := record.FindSysprofMemprofLib(); err != nil {
		testutils.RequireCI(t, "%v", err)
	}
	bin := testutils.BuildFixture(t, "memstress")
	out := filepath.Join(t.TempDir(), "c.syscap")
	cmd, stderr := nsprofProcess(t, "record", "--sysprof-memprof", "--no-perf", "--no-cpu", "--no-memory", "--no-disk", "--no-network", "-o", out, "--", bin, "2", "5000")
	if err := cmd.Run(); err != nil {
		t.Fatalf("record: %v\n%s", err, stderr)
	}
	if !strings.Contains(stderr.String(), "SYSPROF_CONTROL_FD: ") {
		t.Errorf("no control-fd summary in the log:\n%s", stderr)
	}
	r, err := capture.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	pids := map[int32]int{}
	allocs, frees, withStack := 0, 0, 0
	for {
		f, err := r.Next()
		if err != nil {
			break
		}
		a, ok := f.(*capture.Allocation)
		if !ok {
			continue
		}
		pids[a.PID]++
		if a.Size > 0 {
			allocs++
			if len(a.Addrs) > 0 {
				withStack++
			}
		} else {
			frees++
		}
	}
	t.Logf("%d allocations (%d with a stack), %d frees, by pid %v", allocs, withStack, frees, pids)
	if allocs < 100 || frees < 100 || withStack*2 < allocs {
		t.Errorf("%d allocations (%d with a stack) and %d frees from Sysprof's collector, want hundreds with stacks\n%s", allocs, withStack, frees, stderr)
	}
	// The command (the fixture, exec'd by nsprof's child) wrote them all.
	if _, self := pids[int32(cmd.Process.Pid)]; len(pids) != 1 || self {
		t.Errorf("frames by pids %v, want the command's only (nsprof is %d)", pids, cmd.Process.Pid)
	}
}
