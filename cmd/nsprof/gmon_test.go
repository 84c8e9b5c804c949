package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"nsprof/internal/testutils"
)

// gmonBuild builds testdata/gmon: gmonfix.c as libgmonfix.so in dir,
// instrumented with flag ("-pg", "-pg -mfentry" or
// "-finstrument-functions"), and main.c as a -fPIE program linked
// against it. opt is the library's optimization level.
func gmonBuild(t *testing.T, dir, flag, opt string) (lib, prog string) {
	t.Helper()
	gcc := testutils.LookPathOrSkip(t, "gcc")
	src, err := filepath.Abs(filepath.Join("testdata", "gmon"))
	if err != nil {
		t.Fatal(err)
	}
	lib, prog = filepath.Join(dir, "libgmonfix.so"), filepath.Join(dir, "main")
	for _, args := range [][]string{
		append(append([]string{opt, "-g", "-fPIC", "-shared"}, strings.Fields(flag)...), "-o", lib, filepath.Join(src, "gmonfix.c")),
		{"-O2", "-g", "-fPIE", "-pie", "-o", prog, filepath.Join(src, "main.c"), "-L" + dir, "-lgmonfix", "-Wl,-rpath," + dir},
	} {
		if b, err := exec.Command(gcc, args...).CombinedOutput(); err != nil {
			t.Fatalf("gcc %s: %v\n%s", strings.Join(args, " "), err, b)
		}
	}
	return lib, prog
}

// gprofFlat returns the flat profile line of function name in gprof's
// output: percent of the time, self seconds and calls (0 when gprof
// prints none).
func gprofFlat(t *testing.T, out, name string) (pct, self float64, calls int64) {
	t.Helper()
	re := regexp.MustCompile(`(?m)^ *([\d.]+) +[\d.]+ +([\d.]+) +(?:(\d+) +[\d.]+ +[\d.]+)? +` + regexp.QuoteMeta(name) + `$`)
	m := re.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("gprof's flat profile has no line of %s:\n%s", name, out)
	}
	pct, _ = strconv.ParseFloat(m[1], 64)
	self, _ = strconv.ParseFloat(m[2], 64)
	calls, _ = strconv.ParseInt(m[3], 10, 64)
	return pct, self, calls
}

// TestExportGmon records the fixture library, built with -pg, -pg
// -mfentry or -finstrument-functions and loaded by a -fPIE program (both
// at a random base), with --calls at 999 Hz,
// exports gmon.out files of the library and of the program, and checks
// what Debian's unpatched gprof prints of them: the exact call counts
// (gm_f 1,000,000 times, gm_g 1,000 times, 600 from gm_caller_a and 400
// from gm_caller_b) by name in the flat profile and the call graph, and
// the CPU time on the spinning functions. A library of the same name
// but another build-id is refused.
func TestExportGmon(t *testing.T) {
	memprofLib(t)
	gprof := testutils.LookPathOrSkip(t, "gprof")
	for _, flag := range []string{"-pg", "-pg -mfentry", "-finstrument-functions"} {
		t.Run(flag, func(t *testing.T) { testExportGmon(t, gprof, flag) })
	}
}

func testExportGmon(t *testing.T, gprof, flag string) {
	dir := t.TempDir()
	lib, prog := gmonBuild(t, dir, flag, "-O2")
	capture := filepath.Join(dir, "calls.nsprof")
	if _, stderr, status := nsprof(t, nil, "record", "--calls", "-F", "999", "--no-disk", "--no-network", "-o", capture, "--", prog); status != 0 {
		t.Fatalf("record: status %d\n%s", status, stderr)
	}
	export := func(t *testing.T, dso string) (gmon, stderr string) {
		t.Helper()
		gmon = filepath.Join(t.TempDir(), "gmon.out")
		_, stderr, status := nsprof(t, nil, "export", "--format", "gmon", "--dso", dso, "-o", gmon, capture)
		if status != 0 {
			t.Fatalf("export --format gmon --dso %s: status %d\n%s", dso, status, stderr)
		}
		return gmon, stderr
	}
	runGprof := func(t *testing.T, file, gmon string) string {
		t.Helper()
		out, err := exec.Command(gprof, "-b", file, gmon).CombinedOutput()
		if err != nil {
			t.Fatalf("gprof -b %s %s: %v\n%s", file, gmon, err, out)
		}
		return string(out)
	}

	t.Run("library", func(t *testing.T) {
		gmon, stderr := export(t, lib)
		if !strings.Contains(stderr, "at 999 Hz in ") || !strings.Contains(stderr, "bins of 4 bytes") {
			t.Errorf("export does not state the rate and bins:\n%s", stderr)
		}
		// fix_run's call from main is the one arc from outside.
		if !strings.Contains(stderr, "1 calls (1 arcs) into "+lib+" from call sites outside it left out") {
			t.Errorf("export does not count the call from the program:\n%s", stderr)
		}
		out := runGprof(t, lib, gmon)
		if !strings.Contains(out, "Each sample counts as 0.001001 seconds.") {
			t.Errorf("gprof's rate is not 999 Hz:\n%s", out)
		}
		for name, want := range map[string]int64{"gm_f": 1_000_000, "gm_g": 1000, "gm_caller_a": 1, "gm_caller_b": 1, "gm_spin": 1} {
			if _, _, calls := gprofFlat(t, out, name); calls != want {
				t.Errorf("flat profile: %s called %d times, want %d", name, calls, want)
			}
		}
		// 300 ms of CPU time at 999 Hz: about 300 samples, nearly all of
		// the library's.
		if pct, self, _ := gprofFlat(t, out, "gm_spin"); pct < 80 || self < 0.2 {
			t.Errorf("gm_spin: %.2f%% of the time, %.2f s self; want most of it, about 0.30 s", pct, self)
		}
		for _, re := range []string{
			`(?m)^ +[\d.]+ +[\d.]+ +1000000/1000000 +gm_run \[\d+\]\n\[\d+\] +[\d.]+ +[\d.]+ +[\d.]+ +1000000 +gm_f \[\d+\]$`,
			`(?m)^ +[\d.]+ +[\d.]+ +600/1000 +gm_caller_a \[\d+\]$`,
			`(?m)^ +[\d.]+ +[\d.]+ +400/1000 +gm_caller_b \[\d+\]$`,
			`(?m)^\[\d+\] +[\d.]+ +[\d.]+ +[\d.]+ +1000 +gm_g \[\d+\]$`,
			`(?m)^ +[\d.]+ +[\d.]+ +1/1 +gm_run \[\d+\]\n\[\d+\] +[\d.]+ +[\d.]+ +[\d.]+ +1 +gm_spin \[\d+\]$`,
		} {
			if !regexp.MustCompile(re).MatchString(out) {
				t.Errorf("gprof's call graph does not match %s:\n%s", re, out)
			}
		}
	})

	t.Run("executable", func(t *testing.T) {
		gmon, _ := export(t, prog)
		out := runGprof(t, prog, gmon)
		if pct, self, _ := gprofFlat(t, out, "host_spin"); pct < 80 || self < 0.1 {
			t.Errorf("host_spin: %.2f%% of the time, %.2f s self; want most of it, about 0.15 s", pct, self)
		}
	})

	t.Run("build-id mismatch", func(t *testing.T) {
		other, _ := gmonBuild(t, t.TempDir(), flag, "-O1")
		_, stderr, status := nsprof(t, nil, "export", "--format", "gmon", "--dso", other, "-o", filepath.Join(t.TempDir(), "gmon.out"), capture)
		if status != 1 || !strings.Contains(stderr, "build-id mismatch") || !strings.Contains(stderr, lib+" build-id ") {
			t.Errorf("export of another libgmonfix.so: status %d, want 1 and the build-ids named:\n%s", status, stderr)
		}
	})
}

// TestExportGmonUsage checks what export --format gmon refuses: no
// --dso, flags that weigh or shape stacks, a capture that does not
// state its sampling frequency, and a --dso file that is not there.
func TestExportGmonUsage(t *testing.T) {
	dir := t.TempDir()
	capture := writeTestCapture(t, dir, "test.syscap")
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args   []string
		status int
		want   string
	}{
		{[]string{"--format", "gmon"}, 2, "--format gmon needs --dso PATH"},
		{[]string{"--format", "gmon", "--dso", exe, "--value", "cpu"}, 2, "--format gmon takes no --value"},
		{[]string{"--format", "gmon", "--dso", exe, "--invert"}, 2, "--format gmon takes neither --invert nor --by"},
		{[]string{"--format", "gmon", "--dso", filepath.Join(dir, "missing.so")}, 1, "missing.so: no such file or directory"},
		{[]string{"--format", "gmon", "--dso", exe}, 1, "does not state its sampling frequency"},
	} {
		args := append([]string{"export", "-o", filepath.Join(t.TempDir(), "gmon.out")}, tc.args...)
		_, stderr, status := nsprof(t, nil, append(args, capture)...)
		if status != tc.status || !strings.Contains(stderr, tc.want) {
			t.Errorf("%s: status %d, want %d and %q:\n%s", strings.Join(tc.args, " "), status, tc.status, tc.want, stderr)
		}
	}
}
