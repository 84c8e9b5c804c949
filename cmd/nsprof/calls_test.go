package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/pprof/profile"

	"nsprof/capture"
	"nsprof/internal/testutils"
	"nsprof/internal/testutils/containers"
)

// callsBuild builds testdata/calls: fixture.c as libfixture.so with the
// instrumentation flag (-pg or -finstrument-functions) and main.c as a
// host program linked against it, itself instrumented with mainFlags.
// flag may be several words ("-pg -mfentry").
// It returns the program's path.
func callsBuild(t *testing.T, flag string, mainFlags ...string) string {
	t.Helper()
	gcc, err := exec.LookPath("gcc")
	if err != nil {
		testutils.RequireCI(t, "gcc not found (apt-get install gcc): %v", err)
	}
	src, err := filepath.Abs(filepath.Join("testdata", "calls"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	lib := filepath.Join(dir, "libfixture.so")
	cmds := [][]string{
		append(append([]string{"-O2", "-g", "-fPIC", "-shared"}, strings.Fields(flag)...), "-o", lib, filepath.Join(src, "fixture.c")),
		append(append([]string{"-O2", "-g"}, mainFlags...), "-o", filepath.Join(dir, "main"), filepath.Join(src, "main.c"), "-L"+dir, "-lfixture", "-Wl,-rpath,"+dir),
	}
	for _, args := range cmds {
		if b, err := exec.Command(gcc, args...).CombinedOutput(); err != nil {
			t.Fatalf("gcc %s: %v\n%s", strings.Join(args, " "), err, b)
		}
	}
	return filepath.Join(dir, "main")
}

// callsReport is what the tests read of `report --calls --json`.
type callsReport struct {
	Calls struct {
		Timed          bool   `json:"timed"`
		SelfTimeSource string `json:"self_time_source"`
		Functions      []struct {
			Function string `json:"function"`
			Calls    int64  `json:"calls"`
			Total    int64  `json:"total_ns"`
			Self     int64  `json:"self_ns"`
		} `json:"functions"`
		Arcs []struct {
			Caller string `json:"caller"`
			Callee string `json:"callee"`
			Calls  int64  `json:"calls"`
		} `json:"arcs"`
	} `json:"calls"`
}

// recordCalls records the command with --calls (and the CPU samples) and
// returns the capture's path and its calls report.
func recordCalls(t *testing.T, command ...string) (string, callsReport) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "calls.nsprof")
	args := append([]string{"record", "--calls", "--no-cpu", "--no-disk", "--no-network", "-o", out, "--"}, command...)
	_, stderr, status := nsprof(t, nil, args...)
	if status != 0 {
		t.Fatalf("record: status %d\n%s", status, stderr)
	}
	if strings.Contains(stderr, "lost") || strings.Contains(stderr, "not recorded") {
		t.Errorf("calls lost:\n%s", stderr)
	}
	js, stderr, status := nsprof(t, nil, "report", "--calls", "--json", out)
	if status != 0 {
		t.Fatalf("report --calls --json: status %d\n%s", status, stderr)
	}
	var rep callsReport
	if err := json.Unmarshal([]byte(js), &rep); err != nil {
		t.Fatalf("report --calls --json: %v\n%s", err, js)
	}
	return out, rep
}

// fixtureArcs are the calls testdata/calls/fixture.c makes, by
// "caller -> callee".
var fixtureArcs = map[string]int64{
	"fix_host -> fix_run":     1,
	"fix_run -> fix_f":        1000000,
	"fix_run -> fix_caller_a": 1,
	"fix_run -> fix_caller_b": 1,
	"fix_caller_a -> fix_g":   600,
	"fix_caller_b -> fix_g":   400,
}

// checkFixtureArcs checks the arcs of the fixture's functions in rep
// against fixtureArcs and extra, exactly: no arc missing, none more.
func checkFixtureArcs(t *testing.T, rep callsReport, extra map[string]int64) {
	t.Helper()
	want := maps.Clone(fixtureArcs)
	maps.Copy(want, extra)
	got := map[string]int64{}
	for _, a := range rep.Calls.Arcs {
		if strings.HasPrefix(a.Callee, "fix_") {
			got[a.Caller+" -> "+a.Callee] += a.Calls
		}
	}
	for arc, n := range want {
		if got[arc] != n {
			t.Errorf("arc %s: %d calls, want %d", arc, got[arc], n)
		}
	}
	for arc, n := range got {
		if _, ok := want[arc]; !ok {
			t.Errorf("unexpected arc %s (%d calls)", arc, n)
		}
	}
}

// TestCallsFixture records the fixture library, built with -pg (mcount),
// -pg -mfentry (__fentry__) and -finstrument-functions, loaded by a program that is not
// instrumented, and checks every arc's exact count by name, the times
// of the timed build, the text report and the pprof export.
func TestCallsFixture(t *testing.T) {
	memprofLib(t)
	for _, flag := range []string{"-pg", "-pg -mfentry", "-finstrument-functions"} {
		t.Run(flag, func(t *testing.T) {
			out, rep := recordCalls(t, callsBuild(t, flag))
			checkFixtureArcs(t, rep, nil)
			timed := flag == "-finstrument-functions"
			if rep.Calls.Timed != timed {
				t.Errorf("timed %t, want %t", rep.Calls.Timed, timed)
			}
			for _, f := range rep.Calls.Functions {
				if f.Function == "fix_f" || f.Function == "fix_run" {
					if timed && (f.Total <= 0 || f.Self <= 0 || f.Self > f.Total) {
						t.Errorf("%s: total %d ns, self %d ns", f.Function, f.Total, f.Self)
					}
					if !timed && (f.Total != 0 || f.Self != 0) {
						t.Errorf("%s: -pg calls timed: total %d ns, self %d ns", f.Function, f.Total, f.Self)
					}
				}
			}
			text, stderr, status := nsprof(t, nil, "report", "--calls", "-n", "0", out)
			if status != 0 {
				t.Fatalf("report --calls: status %d\n%s", status, stderr)
			}
			for _, re := range []string{
				`(?m)^ time   seconds   seconds    calls +\w+/call +\w+/call  name$`,
				`(?m)^ *[\d.]+ +[\d.]+ +[\d.]+ +1000000 .* fix_f \(libfixture\.so\)$`,
				`(?m)^[ \d.]+ 600/1000 +fix_caller_a \(libfixture\.so\) \[\d+\]\n[ \d.]+ 400/1000 +fix_caller_b \(libfixture\.so\) \[\d+\]\n\[\d+\] .* 1000  fix_g \(libfixture\.so\) \[\d+\]$`,
			} {
				if !regexp.MustCompile(re).MatchString(text) {
					t.Errorf("report --calls does not match %s:\n%s", re, text)
				}
			}
			checkCallsExport(t, out, timed)
			// Sysprof's own reader reads the capture whole, the calls
			// file as any other.
			lines, end := testutils.SysprofReadAll(t, out)
			if !strings.Contains(end, "ok=1") {
				t.Errorf("Sysprof's reader stopped early: %s", end)
			}
			if !slices.ContainsFunc(lines, func(l string) bool { return strings.Contains(l, capture.CallsFile) }) {
				t.Errorf("Sysprof's reader saw no chunk of %s", capture.CallsFile)
			}
		})
	}
}

// checkCallsExport checks the pprof export of the calls: its sample
// types and fix_f's calls.
func checkCallsExport(t *testing.T, capture string, timed bool) {
	t.Helper()
	pb := filepath.Join(t.TempDir(), "calls.pb.gz")
	if _, stderr, status := nsprof(t, nil, "export", "--format", "pprof", "--value", "calls", "-o", pb, capture); status != 0 {
		t.Fatalf("export: status %d\n%s", status, stderr)
	}
	f, err := os.Open(pb)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p, err := profile.Parse(f)
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, st := range p.SampleType {
		types = append(types, st.Type+"/"+st.Unit)
	}
	want := "calls/count"
	if timed {
		want += " call_time/nanoseconds call_self_time/nanoseconds"
	}
	if got := strings.Join(types, " "); got != want {
		t.Errorf("sample types %s, want %s", got, want)
	}
	var calls int64
	for _, s := range p.Sample {
		if len(s.Location) > 0 && len(s.Location[0].Line) > 0 && s.Location[0].Line[0].Function.Name == "fix_f" {
			calls += s.Value[0]
		}
	}
	if calls != 1000000 {
		t.Errorf("pprof export: fix_f called %d times, want 1000000", calls)
	}
}

// TestCallsPgExecutable records a program that is itself linked with -pg:
// glibc's gcrt1 runs __monstartup and writes gmon.out at exit. The
// preload counts the same arcs (and fix_host's), the program exits 0 and
// gmon.out is still written, with the arc of fix_host that glibc's mcount
// saw: the preload passes the calls on to it.
func TestCallsPgExecutable(t *testing.T) {
	memprofLib(t)
	prog := callsBuild(t, "-pg", "-pg")
	t.Chdir(filepath.Dir(prog))
	_, rep := recordCalls(t, prog)
	checkFixtureArcs(t, rep, map[string]int64{"main -> fix_host": 1})
	st, err := os.Stat(filepath.Join(filepath.Dir(prog), "gmon.out"))
	if err != nil {
		t.Fatalf("gmon.out: %v", err)
	}
	if st.Size() < 100 {
		t.Errorf("gmon.out of %d bytes", st.Size())
	}
	if gprof, err := exec.LookPath("gprof"); err == nil {
		out, err := exec.Command(gprof, "-b", "-q", prog, "gmon.out").CombinedOutput()
		if err != nil {
			t.Fatalf("gprof: %v\n%s", err, out)
		}
		// The executable's own arc: fix_host called once by main.
		if !regexp.MustCompile(`(?m)^\[\d+\].*\s1\s+fix_host \[\d+\]$`).Match(out) {
			t.Errorf("gprof does not see fix_host called once:\n%s", out)
		}
	}
}

// TestCallsInPIDNamespace records the -finstrument-functions build run
// as pid 1 of its own PID namespace: the counts are exact, and every arc
// record carries the host's pid and tid of the program, as the rest of
// the capture does, not 1.
func TestCallsInPIDNamespace(t *testing.T) {
	memprofLib(t)
	unshare := testutils.LookPathOrSkip(t, "unshare")
	out, rep := recordCalls(t, unshare, "--pid", "--fork", "--", callsBuild(t, "-finstrument-functions"))
	checkFixtureArcs(t, rep, nil)
	checkHostIDs(t, out)
}

// checkHostIDs checks that the call records of capture out are one
// thread's, with host ids: a pid above 1 (the program is pid 1 of its
// namespace) and the tid of its main thread.
func checkHostIDs(t *testing.T, out string) {
	t.Helper()
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	rd, err := capture.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	fs, err := capture.ReadFiles(rd)
	if err != nil {
		t.Fatal(err)
	}
	b, err := fs.Lookup(capture.CallsFile)
	if err != nil {
		t.Fatal(err)
	}
	recs, err := capture.DecodeCalls(b)
	if err != nil || len(recs) == 0 {
		t.Fatalf("%d call records: %v", len(recs), err)
	}
	pids := map[[2]int32]int{}
	for _, r := range recs {
		pids[[2]int32{r.PID, r.TID}]++
	}
	if len(pids) != 1 {
		t.Errorf("call records of pid/tid %v, want one thread's", pids)
	}
	for id := range pids {
		if id[0] <= 1 || id[1] != id[0] {
			t.Errorf("call records of pid %d tid %d: not the program's host ids", id[0], id[1])
		}
	}
}

// TestCallsInPodman records the -finstrument-functions build run in a
// rootful Podman container by `record --calls -- podman run ...`, whose
// root file system holds the fixture only: the recorder hands the
// container's process the preload and its socket itself. The counts are
// exact, the records carry host ids, and the process is named as the
// container's.
func TestCallsInPodman(t *testing.T) {
	memprofLib(t)
	// The preload needs libm, as in any image with glibc: the fixture
	// links it, so the root file system has it.
	prog := callsBuild(t, "-finstrument-functions", "-Wl,--no-as-needed", "-lm")
	rootfs := containers.RootfsWith(t, prog)
	args, env := containers.PodmanRunArgs(t, rootfs, nil, []string{prog})
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	out, rep := recordCalls(t, args...)
	checkFixtureArcs(t, rep, nil)
	checkHostIDs(t, out)
	procs, stderr, status := nsprof(t, nil, "report", "--processes", out)
	if status != 0 {
		t.Fatalf("report --processes: status %d\n%s", status, stderr)
	}
	if !regexp.MustCompile(`(?m)podman.*` + regexp.QuoteMeta(prog)).MatchString(procs) {
		t.Errorf("the fixture is not shown in its podman container:\n%s", procs)
	}
}

// TestCallsInPodmanRootless records the -finstrument-functions build
// run by `record --calls -- runuser -u USER -- podman run ...` in a
// rootless container, whose user can reach no file of the recorder's
// (the preload is built in a directory of mode 0700) and whose image
// holds the fixture only, and the libraries it links: the counts are
// exact and the records carry host ids.
func TestCallsInPodmanRootless(t *testing.T) {
	memprofLib(t)
	// The preload needs libm, as in any image with glibc: the fixture
	// links it, so the image has it.
	prog := callsBuild(t, "-finstrument-functions", "-Wl,--no-as-needed", "-lm")
	args := containers.PodmanRunRootlessArgs(t, prog, nil)
	out, rep := recordCalls(t, args...)
	checkFixtureArcs(t, rep, nil)
	checkHostIDs(t, out)
}

// uftraceCalls returns the calls per function uftrace counts for prog.
func uftraceCalls(t *testing.T, uftrace, prog string) map[string]int64 {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "uftrace.data")
	// --force: the host program has no mcount of its own; --no-libcall:
	// its PLT call of fix_run is not a second call.
	if out, err := exec.Command(uftrace, "record", "--force", "--no-libcall", "--no-event", "-d", dir, prog).CombinedOutput(); err != nil {
		t.Fatalf("uftrace record: %v\n%s", err, out)
	}
	out, err := exec.Command(uftrace, "report", "--no-pager", "-f", "call", "-d", dir).CombinedOutput()
	if err != nil {
		t.Fatalf("uftrace report: %v\n%s", err, out)
	}
	got := map[string]int64{}
	for _, m := range regexp.MustCompile(`(?m)^\s*(\d+)\s+(\S+)\s*$`).FindAllStringSubmatch(string(out), -1) {
		n, _ := strconv.ParseInt(m[1], 10, 64)
		got[m[2]] += n
	}
	if len(got) == 0 {
		t.Fatalf("no counts in uftrace's report:\n%s", out)
	}
	return got
}

// TestCallsUftrace compares the calls counted by the preload with
// uftrace's for the -pg build of the fixture: every function either
// sees must have the same count in both.
func TestCallsUftrace(t *testing.T) {
	memprofLib(t)
	uftrace := testutils.LookPathOrSkip(t, "uftrace")
	prog := callsBuild(t, "-pg")
	theirs := uftraceCalls(t, uftrace, prog)
	_, rep := recordCalls(t, prog)
	ours := map[string]int64{}
	for _, f := range rep.Calls.Functions {
		if f.Calls > 0 {
			ours[f.Function] = f.Calls
		}
	}
	for _, fn := range []string{"fix_f", "fix_g", "fix_caller_a", "fix_caller_b", "fix_run"} {
		if theirs[fn] == 0 {
			t.Errorf("uftrace did not count %s: %v", fn, theirs)
		}
	}
	for fn, n := range theirs {
		if ours[fn] != n {
			t.Errorf("%s: %d calls, uftrace counts %d", fn, ours[fn], n)
		}
	}
	for fn, n := range ours {
		if theirs[fn] != n {
			t.Errorf("%s: %d calls, uftrace counts %d", fn, n, theirs[fn])
		}
	}
	t.Logf("uftrace: %v", fmt.Sprint(theirs))
}

// TestCallsLostAtExit records a program whose thread is still calling
// the fixture when the process exits (testdata/calls/running.c): the
// calls its thread never wrote are counted as lost, in the summary, the
// log and the report's warnings, not silently dropped.
func TestCallsLostAtExit(t *testing.T) {
	memprofLib(t)
	gcc := testutils.LookPathOrSkip(t, "gcc")
	prog := callsBuild(t, "-finstrument-functions")
	running := filepath.Join(filepath.Dir(prog), "running")
	if b, err := exec.Command(gcc, "-O2", "-pthread", "-o", running, filepath.Join("testdata", "calls", "running.c"),
		"-L"+filepath.Dir(prog), "-lfixture", "-Wl,-rpath,"+filepath.Dir(prog)).CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, b)
	}
	out := filepath.Join(t.TempDir(), "calls.nsprof")
	_, stderr, status := nsprof(t, nil, "record", "--calls", "--no-cpu", "--no-disk", "--no-network", "-o", out, "--", running)
	if status != 0 {
		t.Fatalf("record: status %d\n%s", status, stderr)
	}
	m := regexp.MustCompile(`calls: (\d+) calls not recorded \(threads still running at exit`).FindStringSubmatch(stderr)
	if m == nil || m[1] == "0" || !regexp.MustCompile(`\(\d+ calls lost\)`).MatchString(stderr) {
		t.Errorf("no calls counted lost:\n%s", stderr)
	}
	_, stderr, status = nsprof(t, nil, "report", "--calls", out)
	if status != 0 || !strings.Contains(stderr, "calls were not recorded") {
		t.Errorf("report --calls: status %d, no warning of the lost calls:\n%s", status, stderr)
	}
}

// TestCallsUsage checks that record --calls needs a command, and says
// why and what works for a container or a running process, and that
// report --calls takes no other view, weighing or grouping.
func TestCallsUsage(t *testing.T) {
	for _, args := range [][]string{{"--calls"}, {"--calls", "-p", "1"}, {"--memprof", "-p", "1"}} {
		_, stderr, status := nsprof(t, nil, append([]string{"record", "-o", filepath.Join(t.TempDir(), "x.nsprof")}, args...)...)
		for _, want := range []string{args[0] + ": the library is loaded with LD_PRELOAD", "-- podman run", "not a running process (-p)", "--probe"} {
			if status != 2 || !strings.Contains(stderr, want) {
				t.Errorf("record %v: status %d, want %q in stderr:\n%s", args, status, want, stderr)
			}
		}
	}
	for _, extra := range [][]string{{"--tree"}, {"--memory"}, {"--value", "calls"}, {"--by", "thread"}, {"--marks"}} {
		_, stderr, status := nsprof(t, nil, append(append([]string{"report", "--calls"}, extra...), "x.nsprof")...)
		if status != 2 || !strings.Contains(stderr, "does not combine") {
			t.Errorf("report --calls %v: status %d, stderr:\n%s", extra, status, stderr)
		}
	}
}
