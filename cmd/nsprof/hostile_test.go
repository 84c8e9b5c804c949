package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"nsprof/capture"
	"nsprof/internal/testutils"
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
		z := testutils.GzipBomb([]byte(f.head), []byte(f.unit), 2<<30)
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
