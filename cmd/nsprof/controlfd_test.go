package main

import (
	"os"
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

// A command in its own PID namespace writes its namespace's pids and tids
// in the frames its collector puts in the rings (the fixture is pid 1
// there, its threads 2 and 3); nsprof learns each ring's process from the
// socket's credentials and writes host ids, those of the rest of the
// capture. (Sysprof's collector serves only the first process that
// allocates, so the launchers run without the library: it is preloaded
// into the fixture alone, and --use-trace-fd passes SYSPROF_CONTROL_FD.)
func TestSysprofMemprofInPIDNamespace(t *testing.T) {
	lib, err := record.FindSysprofMemprofLib()
	if err != nil {
		testutils.RequireCI(t, "%v", err)
	}
	if os.Geteuid() != 0 {
		testutils.RequireCI(t, "unshare --pid needs root")
	}
	unshare := testutils.LookPathOrSkip(t, "unshare")
	bin := testutils.BuildFixture(t, "memstress")
	out := filepath.Join(t.TempDir(), "ns.syscap")
	cmd, stderr := nsprofProcess(t, "record", "--use-trace-fd", "--no-perf", "--no-cpu", "--no-memory", "--no-disk", "--no-network", "-o", out,
		"--", unshare, "--pid", "--fork", "--", "env", "LD_PRELOAD="+lib, bin, "2", "5000")
	if err := cmd.Run(); err != nil {
		t.Fatalf("record: %v\n%s", err, stderr)
	}
	r, err := capture.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	byPID := map[int32]int{}
	tids := map[int32]int{}
	for {
		f, err := r.Next()
		if err != nil {
			break
		}
		if a, ok := f.(*capture.Allocation); ok {
			byPID[a.PID]++
			tids[a.TID]++
		}
	}
	t.Logf("allocation frames by host pid %v, by tid %v", byPID, tids)
	total := 0
	for pid, n := range byPID {
		total += n
		if pid <= 3 {
			t.Errorf("%d allocation frames with pid %d, an id of the command's namespace", n, pid)
		}
	}
	for tid, n := range tids {
		if tid <= 3 {
			t.Errorf("%d allocation frames with tid %d, an id of the command's namespace", n, tid)
		}
	}
	// Sysprof's collector drops what its rings cannot take: thousands of
	// the 20000 events, not all.
	if len(byPID) != 1 || total < 1000 || len(tids) < 3 {
		t.Errorf("%d allocation frames from %d processes and %d threads, want thousands from the fixture's 3 threads", total, len(byPID), len(tids))
	}
}
