package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"nsprof/analyze"
	"nsprof/capture"
	"nsprof/internal/testutils"
	"nsprof/internal/testutils/containers"
	"nsprof/record"
)

// marksDoc is what the probe tests read of report --marks --json.
type marksDoc struct {
	Marks       []analyze.MarkStat   `json:"marks"`
	StallNs     int64                `json:"stall_threshold_ns"`
	StallCounts []analyze.StallStats `json:"stall_counts"`
	Stalls      []analyze.Stall      `json:"stalls"`
}

// reportMarks runs report --marks --json on capPath with extra flags.
func reportMarks(t *testing.T, capPath string, extra ...string) marksDoc {
	t.Helper()
	out, stderr, status := nsprof(t, nil, append([]string{"report", "--marks", "--json", capPath}, extra...)...)
	if status != 0 {
		t.Fatalf("report --marks: status %d\n%s", status, stderr)
	}
	var doc marksDoc
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("report --marks --json: %v\n%s", err, out)
	}
	return doc
}

// longStalls returns the stalls of doc of at least min ns. The others,
// shorter calls that a loaded machine kept off the CPU for over 16 ms,
// are logged.
func longStalls(t *testing.T, doc marksDoc, min int64) []analyze.Stall {
	t.Helper()
	var long []analyze.Stall
	for _, st := range doc.Stalls {
		if st.Duration >= min {
			long = append(long, st)
		} else {
			t.Logf("a stall of %.1f ms (%d samples of its thread within it): the machine is loaded", float64(st.Duration)/1e6, st.Samples)
		}
	}
	return long
}

// requireRoot fails (in CI) or skips a test that records without root.
func requireRoot(t *testing.T) {
	t.Helper()
	testutils.RequireRoot(t, "recording tests need root")
}

// TestSpeedtrack: a GLib program built in the test, recorded with
// --speedtrack, has a mark of group mainloop per iteration of its main
// loop that dispatched (at least its 50 short callbacks), all paired; report --marks flags exactly one iteration over
// 16 ms, the 100 ms one, and the stack of its thread's samples within it
// holds slow_callback; the text view shows it too, and Sysprof's own
// reader reads the marks.
func TestSpeedtrack(t *testing.T) {
	requireRoot(t)
	bin := mainloopFixture(t)
	capPath := filepath.Join(t.TempDir(), "mainloop.syscap")
	_, stderr, status := nsprof(t, nil, "record", "-v", "--speedtrack", "-o", capPath, "--", bin)
	if status != 0 {
		t.Fatalf("record --speedtrack: status %d\n%s", status, stderr)
	}
	if !strings.Contains(stderr, "spans: ") || strings.Contains(stderr, "not marked") {
		t.Errorf("want the spans note and no unpaired calls:\n%s", stderr)
	}
	checkSpeedtrack(t, capPath, "g_main_context_dispatch", 50)
}

// TestSpeedtrackPreload: the same with the LD_PRELOAD fallback
// (--speedtrack-preload, as where user probes cannot be placed): marks
// of the main loop's busy time between two polls, one per dispatching
// iteration but the last, the slow one flagged with slow_callback in its
// stack.
func TestSpeedtrackPreload(t *testing.T) {
	requireRoot(t)
	bin := mainloopFixture(t)
	gcc := testutils.LookPathOrSkip(t, "gcc")
	_, file, _, _ := runtime.Caller(0)
	src := filepath.Join(filepath.Dir(file), "..", "..", "preload", "speedtrack.c")
	lib := filepath.Join(t.TempDir(), record.SpeedtrackLibName)
	cmd := exec.Command(gcc, "-O2", "-g", "-Wall", "-Wextra", "-Werror", "-fPIC", "-shared", "-fvisibility=hidden", "-o", lib, src, "-ldl")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build %s: %v\n%s", src, err, b)
	}
	t.Setenv(record.SpeedtrackLibEnv, lib)
	capPath := filepath.Join(t.TempDir(), "preload.syscap")
	_, stderr, status := nsprof(t, nil, "record", "-v", "--speedtrack", "--speedtrack-preload", "-o", capPath, "--", bin)
	if status != 0 {
		t.Fatalf("record --speedtrack --speedtrack-preload: status %d\n%s", status, stderr)
	}
	if !strings.Contains(stderr, "main-loop iterations are measured by "+lib) {
		t.Errorf("want the fallback said:\n%s", stderr)
	}
	// The last iteration is not closed by a poll: 49 when the slow
	// callback shares an iteration with a short one.
	checkSpeedtrack(t, capPath, "busy between polls", 49)
}

// mainloopFixture builds the GLib main-loop fixture.
func mainloopFixture(t *testing.T) string {
	return testutils.BuildFixture(t, "mainloop", testutils.PkgConfig(t, "glib-2.0", "libglib2.0-dev")...)
}

// checkSpeedtrack checks a --speedtrack capture of the main-loop fixture
// (see TestSpeedtrack), whose marks are named name, at least least of
// them.
func checkSpeedtrack(t *testing.T, capPath, name string, least int) {
	t.Helper()
	var n int
	for _, f := range readClean(t, capPath) {
		if m, ok := f.(*capture.Mark); ok && m.Group == capture.MainLoopGroup {
			n++
			if m.Name != name || m.Message != "" {
				t.Errorf("mark %s:%s %q, want mainloop:%s without a message", m.Group, m.Name, m.Message, name)
			}
		}
	}
	if n < least {
		// Each short callback runs in an iteration of its own (its
		// timeout restarts when it returns); the slow one may share
		// one with a short one (more often on a loaded machine).
		t.Errorf("%d mainloop marks, want one per iteration that dispatched: at least %d", n, least)
	}
	doc := reportMarks(t, capPath)
	long := longStalls(t, doc, 100_000_000)
	if len(long) != 1 || doc.StallNs != 16_000_000 {
		t.Fatalf("stalls over %d ns: %+v, want one of 100 ms or more: the slow iteration", doc.StallNs, doc.Stalls)
	}
	st := long[0]
	if st.Name != name || st.TID != st.PID {
		t.Errorf("stall %+v: want %s on the main thread", st, name)
	}
	if !slices.Contains(st.Stack, "slow_callback") || st.StackSamples == 0 {
		t.Errorf("stall stack %v (%d of %d samples): want slow_callback in it", st.Stack, st.StackSamples, st.Samples)
	}
	if len(doc.StallCounts) != 1 || doc.StallCounts[0].Calls != n || doc.StallCounts[0].Stalls != len(doc.Stalls) {
		t.Errorf("stall counts %+v, want %d calls, %d stalls", doc.StallCounts, n, len(doc.Stalls))
	}
	text, _, _ := nsprof(t, nil, "report", "--marks", capPath)
	if !strings.Contains(text, "Stalls: probed calls over 16.000ms") || !strings.Contains(text, "slow_callback") ||
		!regexp.MustCompile(`mainloop:`+name+` +\d+ +\d+ +\|[ .]*#+[ .#]*\|`).MatchString(text) {
		t.Errorf("report --marks text lacks the stall, on its timeline strip too:\n%s", text)
	}
	// Sysprof's own reader takes the capture, marks included.
	lines, end := testutils.SysprofReadAll(t, capPath)
	if !strings.Contains(end, "ok=1") {
		t.Errorf("Sysprof's reader: %s", end)
	}
	sysMarks := 0
	for _, l := range lines {
		if strings.Contains(l, " MARK ") && strings.Contains(l, `group="mainloop"`) && strings.Contains(l, `name="`+name+`"`) {
			sysMarks++
		}
	}
	if sysMarks != n {
		t.Errorf("Sysprof's reader sees %d mainloop marks, want %d", sysMarks, n)
	}
	// A threshold above the iteration flags nothing.
	if doc := reportMarks(t, capPath, "--stall", "10s"); len(doc.Stalls) != 0 {
		t.Errorf("--stall 10s: stalls %+v, want none", doc.Stalls)
	}
}

// TestSpeedtrackPodmanRootless: the main-loop fixture in a rootless
// podman container (native overlay: the container's libglib is its own
// copy, another inode than the host's), recorded with -p --speedtrack,
// gives the same marks and stall: the probes are placed on the file the
// process maps, not on the host's file at the same path.
func TestSpeedtrackPodmanRootless(t *testing.T) {
	requireRoot(t)
	bin := mainloopFixture(t)
	pid, _ := containers.StartPodmanRootlessProgram(t, "overlay", bin, "3000")
	capPath := filepath.Join(t.TempDir(), "podman.syscap")
	_, stderr, status := nsprof(t, nil, "record", "-v", "--speedtrack", "-p", strconv.Itoa(pid), "-o", capPath)
	if status != 0 {
		t.Fatalf("record --speedtrack -p %d: status %d\n%s", pid, status, stderr)
	}
	checkSpeedtrack(t, capPath, "g_main_context_dispatch", 50)
}

// TestSpan: --span PROGRAM:fixture_work marks the 10 calls of the spans
// fixture, the 3 of 30 ms and the 7 of 200 us, with the command (-- cmd)
// and with -p on the running program; report --marks flags the 3 slow
// ones, each with fixture_work in its stack.
func TestSpan(t *testing.T) {
	requireRoot(t)
	bin := testutils.BuildFixture(t, "spans")
	check := func(t *testing.T, capPath string) {
		t.Helper()
		var durs []int64
		for _, f := range readClean(t, capPath) {
			if m, ok := f.(*capture.Mark); ok && m.Group == capture.SpanGroup {
				if m.Name != "fixture_work" || m.Message != "" {
					t.Errorf("mark %s:%s %q, want span:fixture_work without a message", m.Group, m.Name, m.Message)
				}
				durs = append(durs, m.Duration)
			}
		}
		slow := 0
		for _, d := range durs {
			if d >= 30_000_000 {
				slow++
			}
		}
		if len(durs) != 10 || slow != 3 {
			t.Fatalf("span marks %v: want 10 calls, 3 of them of 30 ms or more", durs)
		}
		doc := reportMarks(t, capPath)
		long := longStalls(t, doc, 30_000_000)
		if len(long) != 3 {
			t.Fatalf("stalls %+v, want the 3 calls of 30 ms", doc.Stalls)
		}
		for _, st := range long {
			if !slices.Contains(st.Stack, "fixture_work") {
				t.Errorf("stall at %d: stack %v, want fixture_work in it", st.Time, st.Stack)
			}
		}
	}
	t.Run("command", func(t *testing.T) {
		capPath := filepath.Join(t.TempDir(), "spans.syscap")
		_, stderr, status := nsprof(t, nil, "record", "--span", filepath.Base(bin)+":fixture_work", "-o", capPath, "--", bin)
		if status != 0 {
			t.Fatalf("record --span: status %d\n%s", status, stderr)
		}
		check(t, capPath)
	})
	t.Run("pid", func(t *testing.T) {
		prog := exec.Command(bin, "1500") // starts its calls 1.5 s later
		if err := prog.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- prog.Wait() }()
		defer func() { prog.Process.Kill(); <-done }()
		time.Sleep(100 * time.Millisecond) // until it has exec'd and mapped itself
		capPath := filepath.Join(t.TempDir(), "spans.syscap")
		_, stderr, status := nsprof(t, nil, "record", "--span", bin+":fixture_*", "-p", strconv.Itoa(prog.Process.Pid), "-o", capPath)
		if status != 0 {
			t.Fatalf("record --span -p: status %d\n%s", status, stderr)
		}
		check(t, capPath)
	})
}

// TestSpanThreads: --span on fix_run of testdata/calls/inherit.c marks
// every call, those of the threads and the forked child the command
// creates after the probes are placed too: 6 marks, one on each process's
// main thread (no message) and 4 on the other threads ("tid N", 4
// different tids).
func TestSpanThreads(t *testing.T) {
	requireRoot(t)
	bin := fixtureHost(t, "inherit", "-lpthread")
	capPath := filepath.Join(t.TempDir(), "spans.syscap")
	_, stderr, status := nsprof(t, nil, "record", "--no-cpu", "--span", "libfixture.so:fix_run", "-o", capPath, "--", bin)
	if status != 0 {
		t.Fatalf("record --span: status %d\n%s", status, stderr)
	}
	main, tids := 0, map[string]bool{}
	for _, f := range readClean(t, capPath) {
		m, ok := f.(*capture.Mark)
		if !ok || m.Group != capture.SpanGroup {
			continue
		}
		switch {
		case m.Name != "fix_run":
			t.Errorf("mark %s:%s, want span:fix_run", m.Group, m.Name)
		case m.Message == "":
			main++
		case strings.HasPrefix(m.Message, "tid "):
			tids[m.Message] = true
		default:
			t.Errorf("mark %s:%s message %q, want none or tid N", m.Group, m.Name, m.Message)
		}
	}
	if main != 2 || len(tids) != 4 {
		t.Errorf("%d marks of main threads and %d of other threads (%v), want 2 and 4", main, len(tids), tids)
	}
}

// TestSpanErrors: a spec without a function, a library no process maps
// and a function the file lacks are refused, naming what is missing;
// --speedtrack without a command or -p too.
func TestSpanErrors(t *testing.T) {
	requireRoot(t)
	bin := testutils.BuildFixture(t, "spans")
	out := filepath.Join(t.TempDir(), "x.syscap")
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no function", []string{"--span", "libfoo", "--", bin}, "want LIB:FUNCTION"},
		{"no library", []string{"--span", "libnosuch:f", "--", bin}, `no such file mapped or linked matching "libnosuch"`},
		{"no such function", []string{"--span", filepath.Base(bin) + ":nosuch_fn", "--", bin}, `no function "nosuch_fn" in ` + bin},
		{"not glib", []string{"--speedtrack", "--", bin}, `no such file mapped or linked matching "libglib-2.0"`},
		{"whole system", []string{"--speedtrack", "-a", "--duration", "1"}, "--speedtrack and --span need a command or -p"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, stderr, status := nsprof(t, nil, append([]string{"record", "-o", out, "-f"}, tc.args...)...)
			if status == 0 || !strings.Contains(stderr, tc.want) {
				t.Errorf("status %d, stderr:\n%s\nwant an error with %q", status, stderr, tc.want)
			}
			if _, err := os.Stat(out); err == nil {
				t.Errorf("%s written", out)
				os.Remove(out)
			}
		})
	}
}
