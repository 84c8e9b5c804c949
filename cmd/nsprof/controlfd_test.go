package main

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"nsprof/analyze"
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
	cmd, stderr := nsprofProcess(t, "record", "-v", "--sysprof-memprof", "--no-perf", "--no-cpu", "--no-memory", "--no-disk", "--no-network", "-o", out, "--", bin, "2", "5000")
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
	testutils.RequireRoot(t, "unshare --pid needs root")
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

// A recorder that stops copying (here: stopped by SIGSTOP for a second)
// lets a collector's ring fill, and libsysprof-capture then drops the
// marks it has no room for without a word. The recording must say so, in
// its log, its summary, the capture and the report, with an estimate of
// the marks lost close to what the fixture knows it wrote and the capture
// lacks. Without the stall, a loss (if the machine is that loaded) must
// be reported too.
func TestCollectorRingLossCounted(t *testing.T) {
	bin := testutils.BuildFixture(t, "collector-marks", testutils.PkgConfig(t, "sysprof-capture-4", "libsysprof-4-dev")...)
	for _, stall := range []time.Duration{time.Second, 0} {
		t.Run(fmt.Sprintf("stall=%v", stall), func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "marks.syscap")
			// 200 k marks a second, 108 bytes each: a 4 MiB ring holds 0.2 s.
			cmd, stderr := nsprofProcess(t, "record", "--use-trace-fd", "--no-perf", "--no-cpu", "--no-memory", "--no-disk", "--no-network", "-o", out,
				"--", bin, "200000", "2")
			var stdout bytes.Buffer
			cmd.Stdout = &stdout
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			if stall > 0 {
				time.Sleep(500 * time.Millisecond)
				cmd.Process.Signal(syscall.SIGSTOP)
				time.Sleep(stall)
				cmd.Process.Signal(syscall.SIGCONT)
			}
			if err := cmd.Wait(); err != nil {
				t.Fatalf("record: %v\n%s", err, stderr)
			}
			var written int64
			if _, err := fmt.Sscanf(stdout.String(), "collector-marks: wrote %d marks", &written); err != nil {
				t.Fatalf("fixture output %q: %v", stdout.String(), err)
			}
			tl, err := analyze.LoadTimelineFile(out)
			if err != nil {
				t.Fatal(err)
			}
			received := int64(len(tl.Marks))
			lost := written - received
			col, ok := tl.Collector()
			t.Logf("written %d, received %d, lost %d; capture says %+v (ok %v)", written, received, lost, col, ok)
			if !ok {
				t.Fatalf("no collector totals in the capture (metadata %v)\n%s", tl.Metadata, stderr)
			}
			if col.Frames != uint64(received) {
				t.Errorf("capture says %d collector frames, it holds %d marks", col.Frames, received)
			}
			if stall == 0 {
				// On a loaded machine the copier may still be kept
				// off the CPU long enough: then it must say so.
				if lost > 0 && col.Full == 0 {
					t.Errorf("%d marks lost without a full ring reported\n%s", lost, stderr)
				}
				return
			}
			if lost < 50000 {
				t.Fatalf("the recorder stopped for %v, yet only %d marks of %d lost: the stall did not fill the ring", stall, lost, written)
			}
			if col.Full == 0 || col.BlockedNs < int64(stall/2) {
				t.Errorf("%d marks lost, capture says rings found full %d times for %v", lost, col.Full, time.Duration(col.BlockedNs))
			}
			if est := int64(col.LostEstimate); est < lost/2 || est > lost*2 {
				t.Errorf("%d marks lost, estimated %d", lost, est)
			}
			for _, want := range []string{"rings found full: ", "frames lost"} {
				if !strings.Contains(stderr.String(), want) {
					t.Errorf("log lacks %q:\n%s", want, stderr)
				}
			}
			rep, rerr, status := nsprof(t, nil, "report", "--marks", out)
			if status != 0 || !strings.Contains(rep, "rings found full: ") {
				t.Errorf("report --marks (exit %d) does not show the loss:\n%s%s", status, rep, rerr)
			}
		})
	}
}
