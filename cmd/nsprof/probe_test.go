package main

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"nsprof/capture"
	"nsprof/internal/testutils/containers"
)

// probeReport is what the tests read of `report --calls --json` of a
// --probe capture.
type probeReport struct {
	callsReport
	Capture struct {
		Warnings []string `json:"warnings"`
	} `json:"capture"`
	Probes struct {
		Probes []struct {
			Function string `json:"function"`
			Calls    int64  `json:"calls"`
			Total    int64  `json:"total_ns"`
			Mean     int64  `json:"mean_ns"`
			Min      int64  `json:"min_ns"`
			Max      int64  `json:"max_ns"`
		} `json:"probes"`
	} `json:"calls"`
}

// recordProbe records with args (the --probe flags and the target) and
// returns the capture's path and its calls report; a record that lost
// calls fails the test, as the counts would not be exact.
func recordProbe(t *testing.T, args ...string) (string, probeReport) {
	t.Helper()
	requireRoot(t)
	out := filepath.Join(t.TempDir(), "probe.syscap")
	args = append([]string{"record", "--no-cpu", "--no-disk", "--no-network", "--no-memory", "-o", out}, args...)
	_, stderr, status := nsprof(t, nil, args...)
	if status != 0 {
		t.Fatalf("nsprof %s: status %d\n%s", strings.Join(args, " "), status, stderr)
	}
	if strings.Contains(stderr, "not counted") || strings.Contains(stderr, "lost") {
		t.Errorf("calls lost:\n%s", stderr)
	}
	js, stderr, status := nsprof(t, nil, "report", "--calls", "--json", out)
	if status != 0 {
		t.Fatalf("report --calls --json: status %d\n%s", status, stderr)
	}
	var rep probeReport
	if err := json.Unmarshal([]byte(js), &rep); err != nil {
		t.Fatalf("report --calls --json: %v\n%s", err, js)
	}
	if err := json.Unmarshal([]byte(js), &rep.callsReport); err != nil {
		t.Fatal(err)
	}
	return out, rep
}

// checkProbeCounts checks the calls of each probed function in rep:
// exactly want, in the flat profile and in the probes' ranges, with
// shortest <= mean <= longest, and self time at most the total.
func checkProbeCounts(t *testing.T, rep probeReport, want map[string]int64) {
	t.Helper()
	got := map[string]int64{}
	for _, f := range rep.Calls.Functions {
		if f.Calls == 0 {
			continue
		}
		got[f.Function] = f.Calls
		if f.Total <= 0 || f.Self < 0 || f.Self > f.Total {
			t.Errorf("%s: total %d ns, self %d ns", f.Function, f.Total, f.Self)
		}
	}
	for fn, n := range want {
		if got[fn] != n {
			t.Errorf("%s: %d calls in the flat profile, want %d", fn, got[fn], n)
		}
	}
	for fn, n := range got {
		if _, ok := want[fn]; !ok {
			t.Errorf("unexpected calls of %s (%d)", fn, n)
		}
	}
	ranges := map[string]int64{}
	for _, p := range rep.Probes.Probes {
		_, fn, _ := strings.Cut(p.Function, ":")
		ranges[fn] = p.Calls
		if p.Min <= 0 || p.Min > p.Mean || p.Mean > p.Max {
			t.Errorf("%s: min %d, mean %d, max %d ns", p.Function, p.Min, p.Mean, p.Max)
		}
	}
	for fn, n := range want {
		if ranges[fn] != n {
			t.Errorf("%s: %d calls in the probes' ranges, want %d", fn, ranges[fn], n)
		}
	}
	if len(rep.Capture.Warnings) > 0 {
		t.Errorf("warnings: %q", rep.Capture.Warnings)
	}
}

// probeFixtureCalls are the calls of fixture.c's functions: fix_f
// 1,000,000 times, fix_g 1,000 times (from two callers), the others once.
var probeFixtureCalls = map[string]int64{
	"fix_f": 1000000, "fix_g": 1000, "fix_run": 1, "fix_caller_a": 1, "fix_caller_b": 1,
}

// TestProbeCommand: --probe 'libfixture.so:fix_*' on the --calls
// fixture built without instrumentation, run as the command: the exact
// count of each function of the glob, their durations; with -g the arcs
// of every caller (fix_g: 600 from fix_caller_a, 400 from fix_caller_b),
// as --calls counts them; self time excludes the probed callees
// (fix_run's calls of fix_f); the text report shows the counts and
// ranges. Exact names (two --probe flags) without -g count the same.
func TestProbeCommand(t *testing.T) {
	prog := callsBuild(t, "")
	t.Run("glob callers", func(t *testing.T) {
		out, rep := recordProbe(t, "--probe", "libfixture.so:fix_*", "-g", "--", prog)
		checkProbeCounts(t, rep, probeFixtureCalls)
		// fix_host is in the program, not probed: its arc to fix_run
		// is there, as the caller of a probed function.
		checkFixtureArcs(t, rep.callsReport, nil)
		for _, f := range rep.Calls.Functions {
			if f.Function == "fix_run" && f.Self >= f.Total/2 {
				t.Errorf("fix_run: self %d ns of %d: its million probed calls of fix_f are not subtracted", f.Self, f.Total)
			}
		}
		text, stderr, status := nsprof(t, nil, "report", "--calls", "-n", "0", out)
		if status != 0 {
			t.Fatalf("report --calls: status %d\n%s", status, stderr)
		}
		for _, re := range []string{
			`(?m)^ *[\d.]+ +[\d.]+ +[\d.]+ +1000000 .* fix_f \(libfixture\.so\)$`,
			`(?m)^[ \d.]+ 600/1000 +fix_caller_a \(libfixture\.so\) \[\d+\]\n[ \d.]+ 400/1000 +fix_caller_b \(libfixture\.so\) \[\d+\]\n\[\d+\] .* 1000  fix_g \(libfixture\.so\) \[\d+\]$`,
			`(?m)^ +1000000 +[\d.]+ +[\d.]+ +[\d.]+ +[\d.]+  libfixture\.so:fix_f$`,
			`(?m)^ +1000 +[\d.]+ +[\d.]+ +[\d.]+ +[\d.]+  libfixture\.so:fix_g$`,
		} {
			if !regexp.MustCompile(re).MatchString(text) {
				t.Errorf("report --calls does not match %s:\n%s", re, text)
			}
		}
		checkCallsExport(t, out, true)
	})
	t.Run("names", func(t *testing.T) {
		_, rep := recordProbe(t, "--probe", "libfixture:fix_f", "--probe", "libfixture.so:fix_g", "--", prog)
		checkProbeCounts(t, rep, map[string]int64{"fix_f": 1000000, "fix_g": 1000})
		for _, a := range rep.Calls.Arcs {
			if a.Caller != "<spontaneous>" {
				t.Errorf("arc %s -> %s without -g: the caller is not recorded", a.Caller, a.Callee)
			}
		}
	})
}

// fixtureHost builds the host program testdata/calls/NAME.c against the
// fixture library built without instrumentation, and returns its path.
func fixtureHost(t *testing.T, name string, flags ...string) string {
	t.Helper()
	dir := filepath.Dir(callsBuild(t, ""))
	src, err := filepath.Abs(filepath.Join("testdata", "calls", name+".c"))
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, name)
	args := append([]string{"-O2", "-g", "-o", bin, src, "-L" + dir, "-lfixture", "-Wl,-rpath," + dir}, flags...)
	if b, err := exec.Command("gcc", args...).CombinedOutput(); err != nil {
		t.Fatalf("gcc %s: %v\n%s", strings.Join(args, " "), err, b)
	}
	return bin
}

// delayedFixture builds testdata/calls/delayed.c: it calls fix_run once,
// after the milliseconds it is given.
func delayedFixture(t *testing.T) string { return fixtureHost(t, "delayed") }

// TestProbePID: -p on the running fixture (which starts its calls 1.5 s
// later): the same exact counts and callers; --probe-marks also marks
// each call (group probe), as many marks as calls.
func TestProbePID(t *testing.T) {
	requireRoot(t)
	bin := delayedFixture(t)
	prog := exec.Command(bin, "1500")
	if err := prog.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- prog.Wait() }()
	defer func() { prog.Process.Kill(); <-done }()
	time.Sleep(100 * time.Millisecond) // until it has exec'd and mapped its libraries
	out, rep := recordProbe(t, "--probe", "libfixture.so:fix_[fg]", "--call-graph", "fp", "--probe-marks", "-p", strconv.Itoa(prog.Process.Pid))
	checkProbeCounts(t, rep, map[string]int64{"fix_f": 1000000, "fix_g": 1000})
	arcs := map[string]int64{}
	for _, a := range rep.Calls.Arcs {
		arcs[a.Caller+" -> "+a.Callee] += a.Calls
	}
	for arc, n := range map[string]int64{"fix_run -> fix_f": 1000000, "fix_caller_a -> fix_g": 600, "fix_caller_b -> fix_g": 400} {
		if arcs[arc] != n {
			t.Errorf("arc %s: %d calls, want %d (arcs %v)", arc, arcs[arc], n, arcs)
		}
	}
	marks := map[string]int64{}
	for _, f := range readClean(t, out) {
		if m, ok := f.(*capture.Mark); ok && m.Group == capture.ProbeGroup {
			marks[m.Name]++
		}
	}
	if marks["fix_f"] != 1000000 || marks["fix_g"] != 1000 {
		t.Errorf("probe marks %v, want fix_f 1000000 and fix_g 1000", marks)
	}
}

// TestProbePodmanRootless: the fixture run in a rootless podman
// container (native overlay: its libfixture.so is the container's copy,
// another inode than the host's), recorded with -p --probe by the
// library's name, gives the same exact counts and callers: the probes
// are placed on the file the process maps.
func TestProbePodmanRootless(t *testing.T) {
	requireRoot(t)
	bin := delayedFixture(t)
	pid, _ := containers.StartPodmanRootlessProgram(t, "overlay", bin, "3000")
	_, rep := recordProbe(t, "-v", "--probe", "libfixture:fix_*", "-g", "-p", strconv.Itoa(pid))
	checkProbeCounts(t, rep, probeFixtureCalls)
	checkFixtureArcs(t, rep.callsReport, nil)
}

// TestProbeThreads: a probed command can still create threads and fork
// (the kernel cannot copy a uprobe PMU event into a new task: it reads
// the event's path pointer again in the forking task, and the fork
// failed with EFAULT while such probes were inherited), and the calls of
// its main thread (10) and its worker thread (100) are all counted.
func TestProbeThreads(t *testing.T) {
	requireRoot(t)
	bin := fixtureHost(t, "threads", "-lpthread")
	_, rep := recordProbe(t, "--probe", "libfixture.so:fix_f", "--", bin)
	checkProbeCounts(t, rep, map[string]int64{"fix_f": 110})
}

// TestProbeInherit: the probes of a command hit the tasks it creates
// after they are placed: testdata/calls/inherit.c calls fix_run from its
// main thread (10 calls of fix_f), 3 threads (100, 200, 300), a forked
// child (1000) and the child's thread (5); every call is counted, with
// -g too (the calls of fix_f are the sums of its arcs from fix_run).
func TestProbeInherit(t *testing.T) {
	requireRoot(t)
	bin := fixtureHost(t, "inherit", "-lpthread")
	_, rep := recordProbe(t, "-g", "--probe", "libfixture.so:fix_f", "--probe", "libfixture.so:fix_run", "--", bin)
	checkProbeCounts(t, rep, map[string]int64{"fix_f": 1615, "fix_run": 6})
}

// TestProbeUsage: --probe needs a command or -p, refuses --calls and a
// spec without a function; --probe-marks needs --probe.
func TestProbeUsage(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--probe", "libc:malloc"}, "--probe needs a command or -p"},
		{[]string{"--probe", "libc:malloc", "--calls", "--", "true"}, "--probe and --calls"},
		{[]string{"--probe", "libc", "--", "true"}, "want LIB:FUNCTION"},
		{[]string{"--probe-marks", "--", "true"}, "--probe-marks needs --probe"},
	} {
		_, stderr, status := nsprof(t, nil, append([]string{"record", "-o", filepath.Join(t.TempDir(), "x")}, tc.args...)...)
		if status == 0 || !strings.Contains(stderr, tc.want) {
			t.Errorf("record %s: status %d, want an error with %q:\n%s", strings.Join(tc.args, " "), status, tc.want, stderr)
		}
	}
}
