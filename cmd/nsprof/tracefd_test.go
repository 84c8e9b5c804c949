package main

import (
	"bytes"
	"fmt"
	"io"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"nsprof/capture"
	"nsprof/internal/testutils"
)

// A command writes marks through SYSPROF_TRACE_FD at 200 k a second, on
// the host and in a PID namespace of its own (with and without perf
// events, which otherwise teach the recorder the namespace's ids): every
// mark must reach the capture, in the order written, with the host pid
// of the process that wrote it (it writes its namespace pid, 1), and
// Sysprof's reader and report --marks must read them all.
func TestTraceFDMarksMerged(t *testing.T) {
	bin := testutils.BuildFixture(t, "tracefd-rate", testutils.PkgConfig(t, "sysprof-capture-4", "libsysprof-4-dev")...)
	unshare := testutils.LookPathOrSkip(t, "unshare")
	for _, tc := range []struct {
		name string
		perf bool
		ns   bool
	}{{"host", false, false}, {"pidns", false, true}, {"pidns+perf", true, true}} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "marks.syscap")
			args := []string{"record", "--use-trace-fd", "--no-cpu", "--no-memory", "--no-disk", "--no-network", "-o", out, "--"}
			if !tc.perf {
				args = append(args[:2], append([]string{"--no-perf"}, args[2:]...)...)
			}
			if tc.ns {
				// The host's /proc stays mounted: there the fixture
				// finds its host pid.
				args = append(args, unshare, "--pid", "--fork", "--kill-child")
			}
			cmd, stderr := nsprofProcess(t, append(args, bin, "200000", "0.5")...)
			var stdout bytes.Buffer
			cmd.Stdout = &stdout
			if err := cmd.Run(); err != nil {
				if tc.ns && strings.Contains(stderr.String(), "unshare") {
					testutils.RequireCI(t, "unshare --pid failed: %v\n%s", err, stderr)
				}
				t.Fatalf("record: %v\n%s", err, stderr)
			}
			var nsPID, hostPID int
			var written int
			for _, l := range strings.Split(stdout.String(), "\n") {
				fmt.Sscanf(l, "tracefd-rate: pid %d, /proc/self %d", &nsPID, &hostPID)
				fmt.Sscanf(l, "tracefd-rate: wrote %d marks", &written)
			}
			if written < 1000 || hostPID <= 1 || (tc.ns && nsPID != 1) || (!tc.ns && nsPID != hostPID) {
				t.Fatalf("fixture output %q", stdout.String())
			}
			checkRateMarks(t, out, written, int32(hostPID))

			lines, end := testutils.SysprofReadAll(t, out)
			if !strings.HasSuffix(end, "ok=1") {
				t.Fatalf("Sysprof's reader stopped early: %s", end)
			}
			theirs := 0
			for _, l := range lines {
				if strings.Contains(l, " MARK ") && strings.Contains(l, `group="bench"`) {
					theirs++
				}
			}
			if theirs != written {
				t.Errorf("Sysprof read %d marks, %d written", theirs, written)
			}
			rep, errs, status := nsprof(t, nil, "report", "--marks", out)
			if status != 0 || !regexp.MustCompile(`(?m)^bench:mark +`+strconv.Itoa(written)+` `).MatchString(rep) {
				t.Errorf("report --marks: status %d, want %d bench:mark\n%s%s", status, written, rep, errs)
			}
		})
	}
}

// checkRateMarks checks that the capture at path holds the n marks of
// tracefd-rate, in order (sequence in the message and the duration, times
// never going back) and all with pid.
func checkRateMarks(t *testing.T, path string, n int, pid int32) {
	t.Helper()
	r, err := capture.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	i, last := 0, int64(0)
	for {
		f, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		m, ok := f.(*capture.Mark)
		if !ok || m.Group != "bench" {
			continue
		}
		if m.Message != "i="+strconv.Itoa(i) || m.Duration != int64(i) || m.Time < last || m.PID != pid {
			t.Fatalf("mark %d: %q duration %d at %d (previous at %d) pid %d; want i=%d, duration %d, pid %d", i, m.Message, m.Duration, m.Time, last, m.PID, i, i, pid)
		}
		i, last = i+1, m.Time
	}
	if i != n {
		t.Errorf("%d marks in the capture, %d written", i, n)
	}
}

// A recorder whose command never uses SYSPROF_CONTROL_FD must not wake
// every 2 ms to poll it: without perf events that was about 1900 wakeups
// a second (voluntary context switches) and 5 % of a CPU on a 2-CPU VM,
// where waiting on the socket leaves about 300 (the Go runtime's own and
// the 100 ms tick); with perf events 2100-2800 a second against 750-1100.
func TestTraceFDIdleRecorderSleeps(t *testing.T) {
	for _, tc := range []struct {
		name string
		perf bool
		max  int64
	}{{"no-perf", false, 1500}, {"perf", true, 3500}} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "idle.syscap")
			args := []string{"record", "--use-trace-fd", "--no-cpu", "--no-memory", "--no-disk", "--no-network", "-o", out, "--", "sleep", "2"}
			if !tc.perf {
				args = append([]string{"record", "--no-perf"}, args[1:]...)
			}
			cmd, stderr := nsprofProcess(t, args...)
			if err := cmd.Run(); err != nil {
				t.Fatalf("record: %v\n%s", err, stderr)
			}
			ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage)
			if !ok {
				t.Fatalf("no rusage: %T", cmd.ProcessState.SysUsage())
			}
			t.Logf("2 s recorded: %d voluntary context switches, CPU %v user %v system", ru.Nvcsw, cmd.ProcessState.UserTime(), cmd.ProcessState.SystemTime())
			if ru.Nvcsw > tc.max {
				t.Errorf("%d voluntary context switches in a 2 s recording of sleep, want at most %d: the recorder polls", ru.Nvcsw, tc.max)
			}
		})
	}
}
