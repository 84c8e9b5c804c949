package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"nsprof/capture"
	"nsprof/internal/testutils"
	"nsprof/internal/textsafe"
)

// maxBombRSS bounds the peak resident memory of `nsprof report` on the
// bomb capture of TestReportGzipBomb: 3 MiB of gzip that would inflate
// to 5 GiB. The files are refused at 32 times their stored size (some 70
// MiB each, in turn); the binary itself and a report take about 30 MiB.
const maxBombRSS = 128 << 20

// writeBombCapture writes a capture whose embedded __nsprof_lines__,
// /proc/kallsyms and __symbols__ are gzip bombs of valid-looking text
// (zeros for __symbols__), each some 1 MB stored and 2 GiB inflated, with
// a sample whose kernel and user addresses make report read all three.
// lines, when set, replaces the __nsprof_lines__ bomb.
func writeBombCapture(t *testing.T, path string, lines []byte) {
	writeBombCaptureSize(t, path, lines, 2<<30)
}

// writeBombCaptureSize is writeBombCapture with bombs of size bytes.
func writeBombCaptureSize(t testing.TB, path string, lines []byte, size int64) {
	t.Helper()
	w, err := capture.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	h := capture.FrameHeader{CPU: 0, PID: 10, Time: 1}
	frames := []capture.Frame{
		&capture.Process{FrameHeader: h, Cmdline: "/nonexistent/bomb"},
		&capture.Map{FrameHeader: h, Start: 0x400000, End: 0x500000, Filename: "/nonexistent/bomb"},
		&capture.Sample{FrameHeader: h, TID: 10, Addrs: []uint64{capture.ContextKernel, 0xffffffff81000010, capture.ContextUser, 0x401000}},
	}
	for _, f := range frames {
		if err := w.WriteFrame(f); err != nil {
			t.Fatal(err)
		}
	}
	files := []struct {
		path       string
		head, unit string
	}{
		{capture.LinesFile, "nsprof-lines 1\n", "10\t401000\tf\tf.c\t1\n"},
		{"/proc/kallsyms", "ffffffff81000000 T start\n", "ffffffff81000000 t f\n"},
		{capture.SymbolsFile, "", "\x00"},
	}
	for _, f := range files {
		z := testutils.GzipBomb([]byte(f.head), []byte(f.unit), size)
		if f.path == capture.LinesFile && lines != nil {
			z = lines
		}
		if err := w.AddFileBytes(h, f.path+".gz", z); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestReportGzipBomb runs `nsprof report` on a capture of gzip bombs and
// checks that it refuses each file with a message naming it and the
// capture, and that its peak RSS stays under maxBombRSS.
func TestReportGzipBomb(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bomb.syscap")
	writeBombCapture(t, path, nil)
	out := reportRSS(t, path)
	for _, f := range []string{capture.LinesFile, "/proc/kallsyms", capture.SymbolsFile} {
		want := path + ": embedded file " + f + ".gz: decompresses to more than"
		if !strings.Contains(out, want) {
			t.Errorf("no warning %q", want)
		}
	}
}

// TestReportManyLines runs `nsprof report` on a capture whose lines file,
// within the ratio bound (2 million short records in about 5 MB of gzip,
// 36 MB inflated), holds far more records than its one sample has
// addresses: decoded, it would take some 200 MB.
func TestReportManyLines(t *testing.T) {
	var text bytes.Buffer
	text.WriteString("nsprof-lines 1\n")
	for a := range 2_000_000 {
		fmt.Fprintf(&text, "10\t%x\tf\tf.c\t1\n", 0x400000+a)
	}
	var z bytes.Buffer
	zw := gzip.NewWriter(&z)
	zw.Write(text.Bytes())
	zw.Close()
	path := filepath.Join(t.TempDir(), "lines.syscap")
	writeBombCapture(t, path, z.Bytes())
	out := reportRSS(t, path)
	want := path + ": " + capture.LinesFile + ": 2000000 records, more than the 4 addresses"
	if !strings.Contains(out, want) {
		t.Errorf("no warning %q", want)
	}
}

// peakEnv makes the test binary, run as nsprof, print its peak RSS.
const peakEnv = "NSPROF_TEST_PEAK"

// mainPeak runs nsprof as main does, then prints "peak-rss: N kB" to
// standard error: the VmHWM of this process's memory since its exec. The
// parent cannot take this from wait4's ru_maxrss, which keeps the test
// binary's own high-water mark across the vfork and exec that start it.
func mainPeak() {
	err := run(context.Background(), os.Args[1:], os.Stdout, os.Stderr)
	status := exitStatus(err, os.Stderr)
	b, _ := os.ReadFile("/proc/self/status")
	for l := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			fmt.Fprintf(os.Stderr, "peak-rss: %s\n", strings.TrimSuffix(strings.TrimSpace(v), " kB"))
		}
	}
	os.Exit(status)
}

// reportRSS runs `nsprof report path` in a process of its own and returns
// its output, failing if its peak RSS exceeds maxBombRSS.
func reportRSS(t *testing.T, path string) string {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "report", path)
	cmd.Env = append(os.Environ(), "NSPROF_AS_MAIN=1", peakEnv+"=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("report: %v\n%s", err, out)
	}
	_, kb, ok := strings.Cut(string(out), "peak-rss: ")
	kib, err := strconv.ParseInt(strings.TrimSpace(kb), 10, 64)
	if !ok || err != nil {
		t.Fatalf("no peak-rss line in\n%s", out)
	}
	rss := kib << 10
	t.Logf("report on a %d-byte capture: peak RSS %d MiB\n%s", st.Size(), rss>>20, out)
	if rss > maxBombRSS {
		t.Errorf("peak RSS %d MiB, want at most %d MiB", rss>>20, maxBombRSS>>20)
	}
	return string(out)
}

// hostile is a name a profiled program could choose to attack whoever
// reads its profile on a terminal: an OSC setting the window title, BEL,
// a screen clear, a C1 CSI, a bidi override, DEL, line breaks, a
// tab and invalid UTF-8.
const hostile = "evil\x1b]0;owned\a\x1b[2J\x1b[H\u009b31m\u202e\x7f\r\nnext\tline\xff;x"

// writeHostileCapture writes a capture whose every name is hostile, and
// whose function and DSO names are also some 60 KB long: samples in a
// mapped file named by the __symbols__ bundle, a JIT function, marks,
// logs, counters, metadata, a Podman container, and allocations.
func writeHostileCapture(t testing.TB, path string) {
	writeHostileCaptureLen(t, path, 60_000)
}

// writeHostileCaptureLen is writeHostileCapture with long names of n
// bytes.
func writeHostileCaptureLen(t testing.TB, path string, n int) {
	t.Helper()
	w, err := capture.CreateWithOptions(path, capture.WriterOptions{CaptureTime: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)})
	if err != nil {
		t.Fatal(err)
	}
	long := hostile + strings.Repeat("x", n)
	h := func(ms int64) capture.FrameHeader {
		return capture.FrameHeader{CPU: 0, PID: 10, Time: w.StartTime() + ms*1e6}
	}
	jit, err := w.AddJITMap(long)
	if err != nil {
		t.Fatal(err)
	}
	frames := []capture.Frame{
		&capture.Process{FrameHeader: h(0), Cmdline: hostile},
		&capture.Map{FrameHeader: h(0), Start: 0x400000, End: 0x500000, Filename: "/opt/" + hostile + strings.Repeat("x", 3000)},
		&capture.Sample{FrameHeader: h(1), TID: 11, Addrs: []uint64{capture.ContextUser, 0x401000, 0x401100}},
		&capture.Sample{FrameHeader: h(2), TID: 11, Addrs: []uint64{capture.ContextUser, jit, 0x401100}},
		&capture.Mark{FrameHeader: h(3), Duration: 1e6, Group: hostile, Name: hostile, Message: hostile},
		&capture.Log{FrameHeader: h(4), Severity: capture.LogWarning, Domain: hostile, Message: hostile},
		&capture.CounterDefine{FrameHeader: h(5), Counters: []capture.Counter{{Category: hostile, Name: hostile, Description: hostile, ID: 1, Type: capture.CounterInt64}}},
		&capture.CounterSet{FrameHeader: h(6), Updates: []capture.CounterUpdate{{ID: 1, Value: capture.IntValue(3)}}},
		&capture.Metadata{FrameHeader: h(7), ID: "hostname", Value: hostile},
		&capture.Allocation{FrameHeader: h(8), TID: 11, Addr: 0x1000, Size: 64, Addrs: []uint64{0x401000, 0x401100}},
	}
	for _, f := range frames {
		if err := w.WriteFrame(f); err != nil {
			t.Fatal(err)
		}
	}
	syms, err := capture.EncodeSymbols([]capture.Symbol{
		{PID: 10, Begin: 0x401000, End: 0x401080, Name: long, Tag: long},
		{PID: 10, Begin: 0x401080, End: 0x401200, Name: hostile, Tag: hostile},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.AddFileBytes(h(9), capture.SymbolsFile, syms); err != nil {
		t.Fatal(err)
	}
	info, _ := json.Marshal(capture.ProcessInfo{Kind: "process", PID: 10, Comm: hostile, Cmdline: []string{hostile, hostile},
		Container: &capture.ContainerInfo{Kind: "podman", ID: hostile, Name: hostile}})
	if err := w.AddFileBytes(h(9), capture.ProcessFile, append(info, '\n')); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// maxReportLine bounds a report line for names cut to textsafe.MaxRunes
// (a function and its DSO, or a path of them in a tree), in bytes: the
// escapes of the hostile prefix take up to 6 bytes a rune.
const maxReportLine = 4 * 6 * textsafe.MaxRunes

// checkOutput fails if any line of out, printed by what, holds a raw
// control character or, for report's text views, is longer than
// maxReportLine bytes (JSON, dump and exports keep names whole).
func checkOutput(t testing.TB, what, out string) {
	t.Helper()
	isJSON := strings.Contains(what, "--json") && !strings.HasSuffix(what, "(stderr)")
	if isJSON && !json.Valid([]byte(out)) {
		t.Errorf("%s: not valid JSON: %.500q", what, out)
	}
	for i, l := range strings.Split(out, "\n") {
		if j := textsafe.RawControl(l); j >= 0 {
			t.Errorf("%s: line %d has control character %q at byte %d: %.200q", what, i+1, l[j:j+1], j, l)
		}
		if len(l) > maxReportLine && strings.HasPrefix(what, "report") && !isJSON {
			t.Errorf("%s: line %d is %d bytes long, want at most %d", what, i+1, len(l), maxReportLine)
		}
	}
}

// hostileViews are the argument lists of every report view and text
// export tried on a hostile capture.
var hostileViews = [][]string{
	{"report"}, {"report", "--tree", "--depth", "0", "--min-percent", "0"}, {"report", "--bottom-up"},
	{"report", "--by", "process"}, {"report", "--by", "thread"}, {"report", "--by", "container"},
	{"report", "--json"}, {"report", "--tree", "--json"},
	{"report", "--marks"}, {"report", "--counters"}, {"report", "--processes"}, {"report", "--logs"}, {"report", "--summary"},
	{"report", "--marks", "--json"}, {"report", "--logs", "--json"}, {"report", "--processes", "--json"},
	{"report", "--memory"},
	{"export", "--format", "folded"}, {"export", "--format", "folded", "--by", "container"}, {"export", "--format", "folded", "--memory"},
	{"dump"}, {"dump", "--files"},
}

// TestReportHostileNames runs every report view on a capture whose names
// hold terminal escapes and are 60 KB long: no output line may hold a raw
// control character or be longer than maxReportLine, and the escaped
// names are shown.
func TestReportHostileNames(t *testing.T) {
	path := filepath.Join(t.TempDir(), "hostile.syscap")
	writeHostileCapture(t, path)
	for _, args := range hostileViews {
		what := strings.Join(args, " ")
		stdout, stderr, status := nsprof(t, nil, append(args, path)...)
		if status != 0 {
			t.Errorf("%s: status %d: %s", what, status, stderr)
		}
		checkOutput(t, what, stdout)
		checkOutput(t, what+" (stderr)", stderr)
		if args[0] == "report" && !slices.Contains(args, "--summary") && !slices.Contains(args, "--json") && !strings.Contains(stdout, `evil\x1b]0;owned\a`) {
			t.Errorf("%s: the escaped name is not shown:\n%.2000s", what, stdout)
		}
	}
}
