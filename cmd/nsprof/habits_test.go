package main

// Tests of issue 20: nsprof record as perf and sysprof-cli users type it,
// run as they run it (the binary, real perf events, real programs).

import (
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"nsprof/capture"
	"nsprof/internal/testutils"
)

// metadataOf returns the METADATA values of a capture's frames by key.
func metadataOf(frames []capture.Frame) map[string]string {
	m := map[string]string{}
	for _, f := range frames {
		if md, ok := f.(*capture.Metadata); ok {
			m[md.ID] = md.Value
		}
	}
	return m
}

// TestRecordSystemWhileCommandRuns: perf record -g -F 99 -a -- COMMAND
// records the whole system for the command's lifetime. It exited 2.
func TestRecordSystemWhileCommandRuns(t *testing.T) {
	stop := spin() // a process other than the command, busy throughout
	defer stop()
	out := filepath.Join(t.TempDir(), "a.syscap")
	cmd, stderr := nsprofProcess(t, "record", "-g", "-F", "99", "-a", "-o", out, "--", "sh", "-c", "sleep 1; exit 3")
	start := time.Now()
	if code := exitCodeOf(cmd.Run()); code != 3 {
		t.Fatalf("exit %d, want the command's 3; stderr:\n%s", code, stderr)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("recording took %v: it did not end with the command", d)
	}
	frames := readClean(t, out)
	if md := metadataOf(frames); md[capture.MetaMode] != "system" {
		t.Errorf("mode %q, want system", md[capture.MetaMode])
	}
	self := int32(os.Getpid())
	var mine int
	for _, f := range frames {
		if s, ok := f.(*capture.Sample); ok && s.PID == self {
			mine++
		}
	}
	if mine < 10 {
		t.Errorf("%d samples of the busy test process (pid %d), not the command's: the whole system was not recorded", mine, self)
	}
}

// TestRecordEventFlag: -e takes perf's event names and sysprof-cli's
// VAR=VALUE side by side; -F takes max; bad values get clear errors.
func TestRecordEventFlag(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "e.syscap")
	cmd, stderr := nsprofProcess(t, "record", "-f", "-e", "task-clock", "-e", "NSPROF_T=42", "-o", out, "--",
		"sh", "-c", `test "$NSPROF_T" = 42 || exit 9; i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done`)
	if code := exitCodeOf(cmd.Run()); code != 0 {
		t.Fatalf("-e task-clock -e NSPROF_T=42: exit %d; stderr:\n%s", code, stderr)
	}
	if md := metadataOf(readClean(t, out)); md[capture.MetaEvent] != "task-clock" {
		t.Errorf("-e task-clock: event %q", md[capture.MetaEvent])
	}

	// -F max on a sleeping process. Not on a command: at 100 kHz a clock
	// event's interrupt is charged to the task's own clock, and in this
	// VM it costs about the 10 µs period, so a command's start-up of a
	// millisecond took 1.5 s, and minutes beside other tests (perf record
	// -F max behaves the same here: 3.1 s for a 0.02 s loop).
	sleeper := exec.Command("sleep", "60")
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	defer sleeper.Wait()
	defer sleeper.Process.Kill()
	cmd, stderr = nsprofProcess(t, "record", "-f", "-e", "task-clock", "-F", "max", "--duration", "0.3",
		"-p", strconv.Itoa(sleeper.Process.Pid), "-o", out)
	if code := exitCodeOf(cmd.Run()); code != 0 {
		t.Fatalf("-e task-clock -F max -p PID: exit %d; stderr:\n%s", code, stderr)
	}
	md := metadataOf(readClean(t, out))
	maxRate, err := os.ReadFile("/proc/sys/kernel/perf_event_max_sample_rate")
	if err != nil {
		t.Fatal(err)
	}
	if md[capture.MetaEvent] != "task-clock" || md[capture.MetaFrequency] != strings.TrimSpace(string(maxRate)) {
		t.Errorf("event %q at %q Hz, want task-clock at kernel.perf_event_max_sample_rate %s",
			md[capture.MetaEvent], md[capture.MetaFrequency], strings.TrimSpace(string(maxRate)))
	}

	_, pmuErr := os.Stat("/sys/bus/event_source/devices/cpu")
	cmd, stderr = nsprofProcess(t, "record", "-f", "-e", "cycles", "-o", out, "--", "true")
	if code := exitCodeOf(cmd.Run()); code != 0 {
		t.Fatalf("-e cycles: exit %d; stderr:\n%s", code, stderr)
	}
	md = metadataOf(readClean(t, out))
	if pmuErr != nil {
		if md[capture.MetaEvent] != "cpu-clock" || !strings.Contains(stderr.String(), "sampling cpu-clock instead") {
			t.Errorf("-e cycles without a PMU: event %q, stderr %q; want cpu-clock and a warning", md[capture.MetaEvent], stderr)
		}
		cmd, stderr = nsprofProcess(t, "record", "-f", "-e", "instructions", "-o", out, "--", "true")
		if code := exitCodeOf(cmd.Run()); code != 1 || !strings.Contains(stderr.String(), "no PMU") ||
			!strings.Contains(stderr.String(), "software events work: cpu-clock") {
			t.Errorf("-e instructions without a PMU: exit %d, stderr %q", code, stderr)
		}
	} else if md[capture.MetaEvent] != "cycles" {
		t.Errorf("-e cycles with a PMU: event %q", md[capture.MetaEvent])
	}

	// A tracepoint: every hit is a sample, with its stack. The command
	// execs /bin/true 5 times after its own exec.
	cmd, stderr = nsprofProcess(t, "record", "-f", "-e", "sched:sched_process_exec", "-o", out, "--",
		"sh", "-c", "for i in 1 2 3 4 5; do /bin/true; done")
	if code := exitCodeOf(cmd.Run()); code != 0 {
		t.Fatalf("-e sched:sched_process_exec: exit %d; stderr:\n%s", code, stderr)
	}
	frames := readClean(t, out)
	md = metadataOf(frames)
	var hits int
	for _, f := range frames {
		if s, ok := f.(*capture.Sample); ok && len(s.Addrs) > 2 {
			hits++
		}
	}
	if md[capture.MetaEvent] != "sched:sched_process_exec" || hits < 5 || hits > 6 {
		t.Errorf("-e sched:sched_process_exec: event %q, %d samples with stacks; want 5 or 6", md[capture.MetaEvent], hits)
	}

	for _, c := range []struct{ args, want string }{
		{"-F 10k", `-F "10k": want a sampling rate in Hz`},
		{"-F 0", `-F "0": want a sampling rate in Hz`},
		{"-e nosuch", `-e "nosuch": want VAR=VALUE, a tracepoint subsystem:event, or an event: cpu-clock, cycles, task-clock`},
		{"-e cycles:u", "event modifiers (:u) are not supported"},
		{"-e task-clock -e cpu-clock", "nsprof samples on one event"},
	} {
		args := append([]string{"record", "-o", filepath.Join(dir, "x.syscap")}, strings.Fields(c.args)...)
		cmd, stderr := nsprofProcess(t, append(args, "--", "true")...)
		if code := exitCodeOf(cmd.Run()); code != 2 || !strings.Contains(stderr.String(), c.want) || strings.Contains(stderr.String(), "strconv") {
			t.Errorf("%s: exit %d, stderr %q; want 2 and %q", c.args, code, stderr, c.want)
		}
	}
}

// TestRecordEndsWhenStopped: the capture ends, and the printed duration
// counts, until recording stopped, not until the symbolization after it.
// Symbolization is made slow for real: the command's shell has no debug
// file here, so nsprof asks debuginfod for it, and the server takes 2 s
// to answer.
func TestRecordEndsWhenStopped(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(2 * time.Second)
		http.NotFound(w, r)
	}))
	defer srv.Close()
	out := filepath.Join(t.TempDir(), "d.syscap")
	cmd, stderr := nsprofProcess(t, "record", "--duration", "1", "-o", out, "--", "sh", "-c", "while :; do :; done")
	cmd.Env = append(cmd.Env, "DEBUGINFOD_URLS="+srv.URL, "DEBUGINFOD_TIMEOUT=5", "DEBUGINFOD_CACHE_PATH="+t.TempDir())
	start := time.Now()
	cmd.Run() // the command is ended by SIGTERM at the duration
	took := time.Since(start)
	frames := readClean(t, out)
	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rd, err := capture.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	h := rd.Header()
	var last int64
	for _, fr := range frames {
		if s, ok := fr.(*capture.Sample); ok {
			last = max(last, s.Time)
		}
	}
	if last == 0 {
		t.Fatalf("no samples; stderr:\n%s", stderr)
	}
	if took < 2500*time.Millisecond {
		t.Logf("recording and symbolizing took %v: the debuginfod server was not asked", took)
	}
	if tail := time.Duration(h.EndTime - last); tail > 300*time.Millisecond {
		t.Errorf("capture ends %v after its last sample (header %d..%d, %v in all): symbolization counted in", tail, h.StartTime, h.EndTime, time.Duration(h.EndTime-h.StartTime))
	}
	for _, fr := range frames {
		if t0 := fr.Head().Time; t0 > h.EndTime {
			t.Errorf("%T frame at %d, after the capture's end %d", fr, t0, h.EndTime)
			break
		}
	}
	i := strings.Index(stderr.String(), "recorded ")
	if i < 0 {
		t.Fatalf("no summary; stderr:\n%s", stderr)
	}
	secs, err := strconv.ParseFloat(strings.TrimSuffix(strings.Fields(stderr.String()[i:])[1], "s:"), 64)
	if err != nil || secs > 1.4 {
		t.Errorf("summary %q: want the 1 s recorded (%v)", strings.Fields(stderr.String()[i:])[:2], err)
	}
}

// onTerminal runs nsprof with args under script(1), so that its stdin,
// stdout and stderr are a terminal, and returns what the terminal got.
func onTerminal(t *testing.T, args ...string) string {
	t.Helper()
	script := testutils.LookPathOrSkip(t, "script")
	testutils.RequireRoot(t, "recording tests need root")
	line := strconv.Quote(os.Args[0])
	for _, a := range args {
		line += " " + strconv.Quote(a)
	}
	cmd := exec.Command(script, "-qfec", line, "/dev/null")
	cmd.Env = append(os.Environ(), "NSPROF_AS_MAIN=1", "COLUMNS=200")
	out, _ := cmd.Output()
	return string(out)
}

// checkClearLines fails when a line starts where a status line was left
// on the terminal: every line must follow a newline or the clearing
// sequence "\r\x1b[K".
func checkClearLines(t *testing.T, term string, starts ...string) {
	t.Helper()
	for _, s := range starts {
		for off := 0; ; {
			i := strings.Index(term[off:], s)
			if i < 0 {
				break
			}
			i += off
			before := term[:i]
			if i > 0 && !strings.HasSuffix(before, "\n") && !strings.HasSuffix(before, "\r\x1b[K") {
				t.Errorf("%q printed after %q, on the status line", s, before[max(0, len(before)-60):])
			}
			off = i + len(s)
		}
	}
}

// TestRecordTerminalFeedback: on a terminal, the live status line shows
// while recording the system and is cleared before any other line; a
// command's own output never lands on it; routine notes need -v.
func TestRecordTerminalFeedback(t *testing.T) {
	dir := t.TempDir()
	term := onTerminal(t, "record", "-a", "--duration", "1.5", "-o", filepath.Join(dir, "a.syscap"))
	if !strings.Contains(term, "\rrecording ") {
		t.Errorf("no live status line on a terminal:\n%q", term)
	}
	checkClearLines(t, term, "nsprof:")

	term = onTerminal(t, "record", "-o", filepath.Join(dir, "c.syscap"), "--", "sh", "-c", "sleep 0.5; echo worker-output; sleep 0.5; echo worker-done")
	checkClearLines(t, term, "nsprof:", "worker-output", "worker-done")

	out := filepath.Join(dir, "q.syscap")
	cmd, stderr := nsprofProcess(t, "record", "-o", out, "--", "sh", "-c", "i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done")
	if code := exitCodeOf(cmd.Run()); code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", code, stderr)
	}
	if lines := strings.Split(strings.TrimSpace(stderr.String()), "\n"); len(lines) != 1 || !strings.Contains(lines[0], "recorded ") {
		t.Errorf("stderr of a routine recording (not a terminal): %d lines, want the summary alone:\n%s", len(lines), stderr)
	}
	cmd, stderr = nsprofProcess(t, "record", "-v", "-f", "-o", out, "--", "sh", "-c", "i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done")
	if code := exitCodeOf(cmd.Run()); code != 0 {
		t.Fatalf("-v: exit %d; stderr:\n%s", code, stderr)
	}
	if !strings.Contains(stderr.String(), "bundled ") {
		t.Errorf("-v: no note on the symbols bundled:\n%s", stderr)
	}
}

// TestRecordGTKMarks: --gtk gives a GTK 4 program what it writes its
// marks to. GTK 4.8 (Debian 12) reads only SYSPROF_CONTROL_FD, through
// libsysprof-capture's collector, so --gtk with GTK_TRACE_FD alone
// recorded nothing. A real GTK 4 window runs under gtk4-broadwayd, which
// needs no display.
func TestRecordGTKMarks(t *testing.T) {
	broadwayd := testutils.LookPathOrSkip(t, "gtk4-broadwayd")
	app := testutils.BuildC(t, filepath.Join("testdata", "gtk4app.c"), testutils.PkgConfig(t, "gtk4", "libgtk-4-dev")...)
	display := ":" + strconv.Itoa(40+os.Getpid()%50)
	runtime := t.TempDir()
	bw := exec.Command(broadwayd, display)
	bw.Env = append(os.Environ(), "XDG_RUNTIME_DIR="+runtime)
	if err := bw.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { bw.Process.Kill(); bw.Wait() }()
	time.Sleep(500 * time.Millisecond) // until it listens

	out := filepath.Join(t.TempDir(), "gtk.syscap")
	cmd, stderr := nsprofProcess(t, "record", "--gtk", "-o", out, "--", app)
	cmd.Env = append(cmd.Env, "GDK_BACKEND=broadway", "BROADWAY_DISPLAY="+display, "XDG_RUNTIME_DIR="+runtime)
	if code := exitCodeOf(cmd.Run()); code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", code, stderr)
	}
	marks := map[string]int{}
	n := 0
	for _, f := range readClean(t, out) {
		if m, ok := f.(*capture.Mark); ok && m.Group == "gtk" {
			marks[m.Name]++
			n++
		}
	}
	if n < 10 || marks["frameclock cycle"] == 0 {
		t.Errorf("%d gtk marks (%v); want the frame clock's among many; stderr:\n%s", n, marks, stderr)
	}
}
