package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"nsprof/analyze"
	"nsprof/capture"
	"nsprof/internal/testutils"
	"nsprof/internal/testutils/containers"
)

// TestBlockingFixture: recorded with --blocking 5ms, the blocking fixture's
// 10 nanosleeps and 10 timerfd reads of 20 ms are exactly the marks of
// group syscall (clock_nanosleep and read), each lasting 20 ms within
// what the fixture measured around it, with the read of its other thread
// that lasts the whole run, ended by the process's exit; its 8000 fast calls on the same
// system calls (and getppid, and 100 us sleeps) are absent, unless the
// fixture saw one take 5 ms itself (a loaded machine); the read marks
// name the timerfd; report --marks gives their statistics, and report
// --blocking (--value blocking) and a pprof export put their time on the
// calling functions, fixture_slow_sleep and fixture_slow_read. Sysprof
// reads the capture, its samples and its marks.
func TestBlockingFixture(t *testing.T) {
	testutils.RequireRoot(t, "recording tests need root")
	const n, slowMs = 10, 20
	bin := testutils.BuildFixture(t, "blocking")
	dir := t.TempDir()
	capPath := filepath.Join(dir, "blocking.syscap")
	out := filepath.Join(dir, "times")
	_, stderr, status := nsprof(t, nil, "record", "-v", "--blocking", "5ms", "-o", capPath, "--", bin, fmt.Sprint(n), fmt.Sprint(slowMs), out)
	if status != 0 {
		t.Fatalf("record --blocking: status %d\n%s", status, stderr)
	}
	if !strings.Contains(stderr, "blocking calls: ") {
		t.Errorf("no blocking-call summary in the log:\n%s", stderr)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var slept, readNs, fastOver, fastOverNs int64
	if _, err := fmt.Sscanf(string(b), "sleep %d read %d fast_over_5ms %d fast_over_ns %d", &slept, &readNs, &fastOver, &fastOverNs); err != nil {
		t.Fatalf("fixture output %q: %v", b, err)
	}
	t.Logf("fixture: %d slow sleeps %.3fs, %d slow reads %.3fs, %d fast calls over 5 ms (%.3fs)", n, float64(slept)/1e9, n, float64(readNs)/1e9, fastOver, float64(fastOverNs)/1e9)

	// The marks, as written.
	byName := map[string][]capture.Mark{}
	var stuck []capture.Mark
	for _, m := range blockingMarks(t, capPath) {
		if strings.HasSuffix(m.Message, "(ended by the process's exit)") {
			stuck = append(stuck, m)
			continue
		}
		byName[m.Name] = append(byName[m.Name], m)
	}
	// The other thread's read, ended by the process's exit: the whole
	// run, 2 x 20 ms an iteration.
	if len(stuck) != 1 || stuck[0].Name != "read" || !strings.HasPrefix(stuck[0].Message, "fd 3: pipe:[") || stuck[0].Duration < n*2*slowMs*1e6 {
		t.Errorf("marks ended by the process's exit: %+v, want one read of fd 3, a pipe, of at least %d ms", stuck, n*2*slowMs)
	}
	extra := int64(0)
	for name, ms := range byName {
		if name != "clock_nanosleep" && name != "read" {
			t.Logf("mark of a fast call: %s x %d", name, len(ms))
			extra += int64(len(ms))
		}
	}
	// total is the time of the marks of about 20 ms of each call, and
	// surplus how many more of them there are than slow calls: a fast
	// call the fixture saw take as long (a loaded machine) is one too.
	total, surplus := map[string]int64{}, map[string]int64{}
	for _, name := range []string{"clock_nanosleep", "read"} {
		slow := 0
		for _, m := range byName[name] {
			if m.Duration >= (slowMs-1)*1e6 {
				slow++
				total[name] += m.Duration
			} else {
				extra++
			}
			if m.Duration < 5e6 {
				t.Errorf("%s mark of %d ns: under the 5 ms threshold", name, m.Duration)
			}
			// The slow reads are of the timerfd; a fast read of
			// /dev/zero preempted past 5 ms is a mark too, its path
			// missing when the fixture closed the file before the
			// recorder read it.
			if name == "read" && m.Message != "fd 6: anon_inode:[timerfd]" && m.Message != "fd 5: /dev/zero" && m.Message != "fd 5" {
				t.Errorf("read mark message %q, want %q (or fd 5: /dev/zero)", m.Message, "fd 6: anon_inode:[timerfd]")
			}
		}
		surplus[name] = int64(slow - n)
		if slow < n || surplus[name] > fastOver {
			t.Errorf("%d %s marks of about %d ms, want %d (and at most the %d fast calls the fixture saw take 5 ms or more)", slow, name, slowMs, n, fastOver)
		}
		extra += max(surplus[name], 0)
	}
	if extra > fastOver {
		t.Errorf("%d marks of fast calls; the fixture saw %d fast calls take 5 ms or more", extra, fastOver)
	}
	// The kernel's span of a call lies inside the fixture's, which adds
	// a clock read and a return: at most 2 ms a call on a loaded machine.
	// Fast calls among the marks of 20 ms add at most their own time.
	for name, measured := range map[string]int64{"clock_nanosleep": slept, "read": readNs} {
		got, over := total[name], int64(0)
		if surplus[name] > 0 {
			over = fastOverNs
		}
		t.Logf("%s: marks %.3fs in all, the fixture measured %.3fs", name, float64(got)/1e9, float64(measured)/1e9)
		if got > measured+over || got < measured-n*2e6 {
			t.Errorf("%s marks last %d ns in all, want within 0..%.0f ns under the fixture's %d ns (plus its slow fast calls' %d ns when marks of them are among these)", name, got, n*2e6, measured, over)
		}
	}

	// report --marks: the statistics per call.
	stdout, stderr, status := nsprof(t, nil, "report", capPath, "--marks", "--json")
	if status != 0 {
		t.Fatalf("report --marks: status %d\n%s", status, stderr)
	}
	var rep struct {
		Marks []analyze.MarkStat `json:"marks"`
	}
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatalf("report --marks --json: %v\n%s", err, stdout)
	}
	for _, name := range []string{"clock_nanosleep", "read"} {
		var st *analyze.MarkStat
		for i := range rep.Marks {
			if rep.Marks[i].Group == "syscall" && rep.Marks[i].Name == name {
				st = &rep.Marks[i]
			}
		}
		want := len(byName[name])
		for _, m := range stuck {
			if m.Name == name {
				want++
			}
		}
		if st == nil || st.Count != want || st.Min < 5e6 {
			t.Errorf("report --marks: syscall:%s %+v, want %d marks of 5 ms or more", name, st, want)
		}
	}

	// report --value blocking: the time on the callers.
	funcs, typ := functionTotals(t, capPath, "--blocking")
	if typ != "blocking" {
		t.Fatalf("report --blocking: sample type %q, want blocking", typ)
	}
	if pb := pprofTotal(t, capPath, "fixture_slow_read", "blocking", "--blocking"); pb != funcs["fixture_slow_read"] {
		t.Errorf("export --format pprof --value blocking: fixture_slow_read %d ns, report %d", pb, funcs["fixture_slow_read"])
	}
	t.Logf("blocking: fixture_slow_sleep %.3fs, fixture_slow_read %.3fs, fixture_fast %.3fs, main %.3fs",
		float64(funcs["fixture_slow_sleep"])/1e9, float64(funcs["fixture_slow_read"])/1e9, float64(funcs["fixture_fast"])/1e9, float64(funcs["main"])/1e9)
	for _, c := range []struct {
		fn, call string
		measured int64
	}{{"fixture_slow_sleep", "clock_nanosleep", slept}, {"fixture_slow_read", "read", readNs}} {
		got := funcs[c.fn]
		if surplus[c.call] == 0 && got != total[c.call] {
			t.Errorf("blocking time of %s: %d ns, want its marks' %d", c.fn, got, total[c.call])
		}
		if surplus[c.call] > 0 && (got > c.measured || got < c.measured-n*2e6) {
			// Its marks are among those of fast calls as long: its own
			// time is what the fixture measured, less up to 2 ms a call.
			t.Errorf("blocking time of %s: %d ns, want within 0..%.0f ns under the fixture's %d ns", c.fn, got, n*2e6, c.measured)
		}
	}
	if funcs["[syscall: read]"] < total["read"] || funcs["[syscall: clock_nanosleep]"] < total["clock_nanosleep"] {
		t.Errorf("marker frames [syscall: read] %d ns and [syscall: clock_nanosleep] %d ns, want at least the marks' %d and %d",
			funcs["[syscall: read]"], funcs["[syscall: clock_nanosleep]"], total["read"], total["clock_nanosleep"])
	}
	if len(stuck) == 1 && funcs["fixture_stuck_read"] != stuck[0].Duration {
		t.Errorf("blocking time of fixture_stuck_read: %d ns, want its mark's %d", funcs["fixture_stuck_read"], stuck[0].Duration)
	}
	if extra == 0 && funcs["fixture_fast"] != 0 {
		t.Errorf("fixture_fast has %d ns of blocking time, and no mark of a fast call", funcs["fixture_fast"])
	}
	cpu, _ := functionTotals(t, capPath)
	for name := range cpu {
		if strings.HasPrefix(name, "[syscall: ") {
			t.Errorf("the default view (CPU samples) has blocking-call frame %s", name)
		}
	}
	// Sysprof reads the CPU samples only as SAMPLE frames (the entry
	// stacks are not: its callgraph would count them as CPU time), and
	// every mark of a blocking call.
	sysprofReadsOffCPU(t, capPath)
	lines, _ := testutils.SysprofReadAll(t, capPath)
	sysprofMarks := 0
	for _, l := range lines {
		if strings.Contains(l, " MARK ") && strings.Contains(l, `group="syscall"`) {
			sysprofMarks++
		}
	}
	want := len(stuck)
	for _, ms := range byName {
		want += len(ms)
	}
	if sysprofMarks != want {
		t.Errorf("Sysprof read %d marks of group syscall, want %d", sysprofMarks, want)
	}
}

// blockingMarks returns the marks of blocking calls in the capture at
// path.
func blockingMarks(t *testing.T, path string) []capture.Mark {
	t.Helper()
	r, err := capture.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var out []capture.Mark
	for {
		f, err := r.Next()
		if err != nil {
			break
		}
		if m, ok := f.(*capture.Mark); ok && m.Group == capture.BlockingGroup {
			out = append(out, *m)
		}
	}
	return out
}

// TestBlockingTargets: record --blocking with -p and with -a follows the
// blocking fixture running as pid 1 of its own PID namespace (the events
// carry host pids): its slow sleeps and reads are marks of its host pid,
// each of about 20 ms, the reads naming the timerfd, and their time is on
// the calling functions; with -a, the recorder's own calls (waiting on
// its rings) are not recorded.
func TestBlockingTargets(t *testing.T) {
	testutils.RequireRoot(t, "recording tests need root")
	bin := testutils.BuildFixture(t, "blocking")
	unshare := testutils.LookPathOrSkip(t, "unshare")
	for _, mode := range []string{"-p", "-a"} {
		t.Run(mode, func(t *testing.T) {
			dir := t.TempDir()
			capPath := filepath.Join(dir, "blocking.syscap")
			cmd := exec.Command(unshare, "--pid", "--fork", bin, "1000", "20", filepath.Join(dir, "times"))
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				cmd.Process.Kill()
				cmd.Wait()
			})
			pid := 0
			for deadline := time.Now().Add(5 * time.Second); pid == 0 && time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
				b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", cmd.Process.Pid, cmd.Process.Pid))
				if f := strings.Fields(string(b)); len(f) > 0 {
					if p, _ := strconv.Atoi(f[0]); p > 0 {
						if exe, _ := os.Readlink(fmt.Sprintf("/proc/%d/exe", p)); exe == bin {
							pid = p
						}
					}
				}
			}
			if pid == 0 {
				t.Fatalf("no fixture under unshare pid %d after 5s", cmd.Process.Pid)
			}
			args := []string{"record", "--blocking", "5ms", "-o", capPath, "--duration", "2"}
			if mode == "-p" {
				args = append(args, "-p", fmt.Sprint(pid))
			} else {
				args = append(args, "-a")
			}
			_, stderr, status := nsprof(t, nil, args...)
			if status != 0 {
				t.Fatalf("record %q: status %d\n%s", args, status, stderr)
			}
			counts := map[string]int{}
			for _, m := range blockingMarks(t, capPath) {
				switch {
				case m.PID == int32(os.Getpid()):
					t.Errorf("a mark of the recorder itself: %s %d ns", m.Name, m.Duration)
				case m.PID != int32(pid):
					continue
				case m.Name == "read" && m.Message == "fd 5: /dev/zero":
					// A fast read of /dev/zero preempted on a loaded
					// machine: named right, not one of the slow reads.
				case m.Duration >= 19e6 && m.Duration < 100e6:
					counts[m.Name]++
					// The last read may still be under way when the
					// recording stops: its message says so.
					if m.Name == "read" && m.Message != "fd 6: anon_inode:[timerfd]" && m.Message != "fd 6: anon_inode:[timerfd] (still in the call when the recording stopped)" {
						t.Errorf("read mark message %q", m.Message)
					}
				}
			}
			funcs, _ := functionTotals(t, capPath, "--pid", fmt.Sprint(pid), "--value", "blocking")
			t.Logf("%s: pid %d: marks %v; blocking time fixture_slow_sleep %.3fs fixture_slow_read %.3fs", mode, pid, counts,
				float64(funcs["fixture_slow_sleep"])/1e9, float64(funcs["fixture_slow_read"])/1e9)
			// 2 s hold about 45 iterations of 2 x 20 ms; setting up -a
			// takes part of them on a loaded machine.
			for _, name := range []string{"clock_nanosleep", "read"} {
				if counts[name] < 10 {
					t.Errorf("%d %s marks of about 20 ms for pid %d, want at least 10", counts[name], name, pid)
				}
			}
			if funcs["fixture_slow_sleep"] < 10*19e6 || funcs["fixture_slow_read"] < 10*19e6 {
				t.Errorf("blocking time of fixture_slow_sleep %d ns, fixture_slow_read %d ns: want at least 10 x 19 ms each", funcs["fixture_slow_sleep"], funcs["fixture_slow_read"])
			}
		})
	}
}

// TestBlockingPodmanRootless: record --blocking -p on the target of a
// rootless podman container (its own user, PID and mount namespaces)
// gives its sleeps (usleep(1000) after each burst of work, in main), with
// a threshold under them, as marks of its host pid whose stacks go
// through main.
func TestBlockingPodmanRootless(t *testing.T) {
	testutils.RequireRoot(t, "recording tests need root")
	pid, _ := containers.StartPodmanRootless(t, "overlay")
	capPath := filepath.Join(t.TempDir(), "blocking.syscap")
	if _, stderr, status := nsprof(t, nil, "record", "--blocking", "500us", "-p", fmt.Sprint(pid), "--duration", "2", "-o", capPath); status != 0 {
		t.Fatalf("record: status %d\n%s", status, stderr)
	}
	sleeps := 0
	for _, m := range blockingMarks(t, capPath) {
		if m.PID == int32(pid) && (m.Name == "clock_nanosleep" || m.Name == "nanosleep") && m.Duration >= 500e3 {
			sleeps++
		}
	}
	funcs, _ := functionTotals(t, capPath, "--pid", fmt.Sprint(pid), "--blocking")
	t.Logf("pid %d: %d sleep marks; blocking time through main %.3fs, under [syscall: clock_nanosleep] %.3fs", pid, sleeps,
		float64(funcs["main"])/1e9, float64(funcs["[syscall: clock_nanosleep]"])/1e9)
	if sleeps < 100 {
		t.Errorf("%d sleep marks of pid %d, want at least 100 (1 ms sleeps for 2 s)", sleeps, pid)
	}
	if b := funcs["[syscall: clock_nanosleep]"] + funcs["[syscall: nanosleep]"]; b == 0 || funcs["main"] < b*9/10 {
		t.Errorf("blocking time: %d ns of sleeps, %d ns through main; want nearly all through main: %v", b, funcs["main"], funcs)
	}
}
