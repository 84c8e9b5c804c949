package main

import (
	"bytes"
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/gzip"

	"nsprof/capture"
)

// nsprof runs the command line in-process and returns what it printed and
// the exit status main would use.
func nsprof(t testing.TB, stdin io.Reader, args ...string) (stdout, stderr string, status int) {
	t.Helper()
	var out, errb bytes.Buffer
	err := runIO(t.Context(), args, stdin, &out, &errb)
	status = exitStatus(err, &errb)
	return out.String(), errb.String(), status
}

const (
	testStart   = 5_000_000_000
	cpuinfo     = "processor\t: 0\nmodel name\t: Test CPU\n"
	helloText   = "hello, world\n"
	wantSummary = `capture time=2026-01-02T03:04:05Z start=5000000000 end=5009000000 duration=0.009000000s little-endian
TYPE               FRAMES        BYTES
SAMPLE                  1           48
PROCESS                 2           72
EXIT                    1           24
CTRDEF                  1          160
CTRSET                  2          256
MARK                    1          104
LOG                     1           80
FILE_CHUNK              2          656
total                  11         1400
pids 2, frame times +0.000000000s .. +0.009000000s
`
)

// writeTestCapture writes a small capture with two processes (pids 10 and
// 20) and one frame of most types, and returns its path.
func writeTestCapture(t testing.TB, dir, name string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	w, err := capture.CreateWithOptions(path, capture.WriterOptions{
		StartTime:   testStart,
		CaptureTime: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
		Clock:       func() int64 { return math.MinInt64 },
	})
	if err != nil {
		t.Fatal(err)
	}
	h := func(pid int32, ms int64) capture.FrameHeader {
		return capture.FrameHeader{CPU: 1, PID: pid, Time: testStart + ms*1e6}
	}
	frames := []capture.Frame{
		&capture.Process{FrameHeader: h(10, 0), Cmdline: "/bin/ten --flag"},
		&capture.Process{FrameHeader: h(20, 0), Cmdline: "twenty"},
		&capture.Sample{FrameHeader: h(10, 1), TID: 11, Addrs: []uint64{capture.ContextUser, 0x401000}},
		&capture.CounterDefine{FrameHeader: h(10, 2), Counters: []capture.Counter{{Category: "CPU", Name: "Load", ID: 1, Type: capture.CounterDouble}}},
		&capture.CounterSet{FrameHeader: h(10, 3), Updates: []capture.CounterUpdate{{ID: 1, Value: capture.DoubleValue(0.5)}}},
		&capture.CounterSet{FrameHeader: h(10, 4), Updates: []capture.CounterUpdate{{ID: 1, Value: capture.DoubleValue(1.25)}}},
		&capture.Mark{FrameHeader: h(20, 5), Duration: 2e6, Group: "g", Name: "phase", Message: "work"},
		&capture.Log{FrameHeader: h(10, 6), Severity: capture.LogInfo, Domain: "d", Message: "line\nbreak"},
	}
	for _, f := range frames {
		if err := w.WriteFrame(f); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.AddFileBytes(h(10, 7), "/etc/hello", []byte(helloText)); err != nil {
		t.Fatal(err)
	}
	if err := w.AddFileGzip(h(10, 8), "/proc/cpuinfo", []byte(cpuinfo)); err != nil {
		t.Fatal(err)
	}
	if err := w.WriteFrame(&capture.Exit{FrameHeader: h(20, 9)}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestVersion(t *testing.T) {
	old := version
	t.Cleanup(func() { version = old })
	version = "v1.2.3-4-gabcdef"
	out, _, status := nsprof(t, nil, "--version")
	if status != 0 || out != "nsprof v1.2.3-4-gabcdef\n" {
		t.Errorf("--version = %q, status %d", out, status)
	}
	version = ""
	if v := versionString(); v == "" {
		t.Error("versionString() is empty without -ldflags")
	}
}

func TestRoot(t *testing.T) {
	out, _, status := nsprof(t, nil)
	if status != 0 || !strings.Contains(out, "dump") || !strings.Contains(out, "cat") {
		t.Errorf("nsprof without arguments: status %d, help %q", status, out)
	}
	_, stderr, status := nsprof(t, nil, "dmup")
	if status != 2 || stderr != "nsprof: unknown command \"dmup\"; did you mean dump? (see 'nsprof --help')\n" {
		t.Errorf("unknown command: status %d, stderr %q", status, stderr)
	}
}

func TestDump(t *testing.T) {
	path := writeTestCapture(t, t.TempDir(), "test.syscap")
	header := "capture time=2026-01-02T03:04:05Z start=5000000000 end=5009000000 duration=0.009000000s little-endian\n"
	all := []string{
		`+0.000000000 cpu=1 pid=10 PROCESS cmdline="/bin/ten --flag"`,
		`+0.000000000 cpu=1 pid=20 PROCESS cmdline="twenty"`,
		`+0.001000000 cpu=1 pid=10 SAMPLE tid=11 n=2 addrs=[user],0x401000`,
		`+0.002000000 cpu=1 pid=10 CTRDEF n=1 [id=1 double "CPU"/"Load" "" value=0]`,
		`+0.003000000 cpu=1 pid=10 CTRSET n=1 1=0.5`,
		`+0.004000000 cpu=1 pid=10 CTRSET n=1 1=1.25`,
		`+0.005000000 cpu=1 pid=20 MARK duration=+0.002000000 group="g" name="phase" message="work"`,
		`+0.006000000 cpu=1 pid=10 LOG severity=64 domain="d" message="line\nbreak"`,
		`+0.007000000 cpu=1 pid=10 FILE_CHUNK path="/etc/hello" len=13 last=true`,
		`+0.008000000 cpu=1 pid=10 FILE_CHUNK path="/proc/cpuinfo.gz" len=` + itoa(len(gz(t, cpuinfo))) + ` last=true`,
		`+0.009000000 cpu=1 pid=20 EXIT`,
	}
	lines := func(idx ...int) string {
		var b strings.Builder
		b.WriteString(header)
		for _, i := range idx {
			b.WriteString(all[i] + "\n")
		}
		return b.String()
	}
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"all", []string{path}, lines(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10)},
		{"type list", []string{"--type", "MARK,process", path}, lines(0, 1, 6)},
		{"type repeated", []string{"-t", "MARK", "-t", "13", path}, lines(6, 8, 9)},
		{"ctrset knows ctrdef types", []string{"--type=CTRSET", path}, lines(4, 5)},
		{"pid", []string{"--pid", "20", path}, lines(1, 6, 10)},
		{"pid list", []string{"--pid=20,10", "--type", "PROCESS", path}, lines(0, 1)},
		{"pid none", []string{"-p", "99", path}, lines()},
		{"summary", []string{"--summary", path}, wantSummary},
		{"files", []string{"--files", path}, "PATH              SIZE  COMPLETE  GZ\n/etc/hello        13    yes       no\n/proc/cpuinfo.gz  " + itoa(len(gz(t, cpuinfo))) + "    yes       yes\n"},
		{"extract", []string{"--extract", "/etc/hello", path}, helloText},
		{"extract gz by plain name", []string{"-x", "/proc/cpuinfo", path}, cpuinfo},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, stderr, status := nsprof(t, nil, append([]string{"dump"}, tt.args...)...)
			if status != 0 || stderr != "" {
				t.Fatalf("status %d, stderr %q", status, stderr)
			}
			if out != tt.want {
				t.Errorf("output:\n%s\nwant:\n%s", out, tt.want)
			}
		})
	}
}

func TestDumpExtractRawGzip(t *testing.T) {
	path := writeTestCapture(t, t.TempDir(), "test.syscap")
	out, _, status := nsprof(t, nil, "dump", "--extract", "/proc/cpuinfo.gz", path)
	if status != 0 {
		t.Fatalf("status %d", status)
	}
	zr, err := gzip.NewReader(strings.NewReader(out))
	if err != nil {
		t.Fatalf("extracting by the .gz name should give the stored gzip data: %v", err)
	}
	if b, _ := io.ReadAll(zr); string(b) != cpuinfo {
		t.Errorf("decompressed %q", b)
	}
}

func TestDumpOutputFile(t *testing.T) {
	dir := t.TempDir()
	path := writeTestCapture(t, dir, "test.syscap")
	out := filepath.Join(dir, "hello.txt")
	stdout, _, status := nsprof(t, nil, "dump", "-x", "/etc/hello", "-o", out, path)
	if status != 0 || stdout != "" {
		t.Fatalf("status %d, stdout %q", status, stdout)
	}
	if b, err := os.ReadFile(out); err != nil || string(b) != helloText {
		t.Errorf("%s = %q, %v", out, b, err)
	}
}

func TestDumpStdin(t *testing.T) {
	path := writeTestCapture(t, t.TempDir(), "test.syscap")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"--summary"}, {"--files"}, {"-x", "/proc/cpuinfo"}, {}} {
		fromFile, _, _ := nsprof(t, nil, append(append([]string{"dump"}, args...), path)...)
		fromStdin, stderr, status := nsprof(t, bytes.NewReader(data), append(append([]string{"dump"}, args...), "-")...)
		if status != 0 || fromStdin != fromFile {
			t.Errorf("dump %v -: status %d, stderr %q, output differs from file:\n%s", args, status, stderr, fromStdin)
		}
	}
}

func TestDumpErrors(t *testing.T) {
	path := writeTestCapture(t, t.TempDir(), "test.syscap")
	tests := []struct {
		name   string
		args   []string
		status int
		stderr string
	}{
		{"no file", []string{"dump"}, 2, "accepts 1 arg(s), received 0"},
		{"two files", []string{"dump", path, path}, 2, "accepts 1 arg(s), received 2"},
		{"bad type", []string{"dump", "-t", "SAMPEL", path}, 2, `unknown frame type "SAMPEL"`},
		{"bad pid", []string{"dump", "--pid", "1,x", path}, 2, `--pid: "x" is not a process id`},
		{"unknown flag", []string{"dump", "--frobnicate", path}, 2, "unknown flag: --frobnicate"},
		{"two modes", []string{"dump", "--files", "--summary", path}, 2, "--summary and --files cannot be combined"},
		{"filter with files", []string{"dump", "--files", "-t", "MARK", path}, 2, "--type and --pid do not apply to --files"},
		{"missing file", []string{"dump", "/nonexistent.syscap"}, 1, "/nonexistent.syscap: no such file"},
		{"not a capture", []string{"dump", "main_test.go"}, 1, "main_test.go: capture: bad magic"},
		{"missing embedded file", []string{"dump", "-x", "/nope", path}, 1, "embedded file /nope: not found"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, stderr, status := nsprof(t, nil, tt.args...)
			if status != tt.status || !strings.HasPrefix(stderr, "nsprof: ") || !strings.Contains(stderr, tt.stderr) {
				t.Errorf("status %d, stderr %q; want status %d, stderr containing %q", status, stderr, tt.status, tt.stderr)
			}
		})
	}
}

// TestDumpTruncated cuts the test capture at every length: dump must print
// exactly the frames before the cut, then fail with the offset, unless the
// cut falls between frames.
func TestDumpTruncated(t *testing.T) {
	dir := t.TempDir()
	path := writeTestCapture(t, dir, "test.syscap")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	full, _, _ := nsprof(t, nil, "dump", path)
	fullLines := strings.SplitAfter(full, "\n")
	ends := frameEnds(t, data)
	cut := filepath.Join(dir, "cut.syscap")
	for n := 0; n < len(data); n++ {
		if err := os.WriteFile(cut, data[:n], 0o600); err != nil {
			t.Fatal(err)
		}
		out, stderr, status := nsprof(t, nil, "dump", cut)
		if n < capture.HeaderSize {
			if status != 1 || out != "" || !strings.Contains(stderr, "truncated file header") {
				t.Fatalf("cut at %d: status %d, stdout %q, stderr %q", n, status, out, stderr)
			}
			continue
		}
		complete := 0 // frames wholly before the cut
		for complete < len(ends) && ends[complete] <= n {
			complete++
		}
		if want := strings.Join(fullLines[:1+complete], ""); out != want {
			t.Fatalf("cut at %d: stdout\n%s\nwant\n%s", n, out, want)
		}
		atBoundary := n == capture.HeaderSize || slices.Contains(ends, n)
		switch {
		case atBoundary && status != 0:
			t.Fatalf("cut at frame boundary %d: status %d, stderr %q", n, status, stderr)
		case !atBoundary && (status != 1 || !strings.HasPrefix(stderr, "nsprof: "+cut+": capture: ") || !strings.Contains(stderr, "at offset")):
			t.Fatalf("cut at %d: status %d, stderr %q", n, status, stderr)
		}
		for _, mode := range []string{"--summary", "--files", "--extract=/proc/cpuinfo"} {
			if _, stderr, status := nsprof(t, nil, "dump", mode, cut); status == 2 || (status == 1) != (stderr != "") {
				t.Fatalf("dump %s, cut at %d: status %d, stderr %q", mode, n, status, stderr)
			}
		}
	}
}

// frameEnds returns the file offset after each frame of a capture.
func frameEnds(t *testing.T, data []byte) []int {
	t.Helper()
	r, err := capture.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	var ends []int
	for {
		if _, err := r.Next(); err != nil {
			if err != io.EOF {
				t.Fatal(err)
			}
			return ends
		}
		ends = append(ends, int(r.Offset()))
	}
}

func TestCat(t *testing.T) {
	dir := t.TempDir()
	a := writeTestCapture(t, dir, "a.syscap")
	b := writeTestCapture(t, dir, "b.syscap")
	out := filepath.Join(dir, "out.syscap")

	if _, stderr, status := nsprof(t, nil, "cat", a, b, "-o", out); status != 0 {
		t.Fatalf("cat: status %d, stderr %q", status, stderr)
	}
	summary, _, _ := nsprof(t, nil, "dump", "--summary", out)
	if !strings.Contains(summary, "\ntotal                  22         2800\n") || !strings.Contains(summary, "\nCTRDEF                  2          320\n") {
		t.Errorf("merged summary:\n%s", summary)
	}
	before, _ := os.ReadFile(out)

	_, stderr, status := nsprof(t, nil, "cat", a, "-o", out)
	if status != 1 || stderr != "nsprof: "+out+": file exists (use -f to overwrite)\n" {
		t.Errorf("cat onto existing: status %d, stderr %q", status, stderr)
	}
	if after, _ := os.ReadFile(out); !bytes.Equal(after, before) {
		t.Error("cat without -f changed the existing output")
	}
	if _, stderr, status := nsprof(t, nil, "cat", a, "--force", "-o", out); status != 0 {
		t.Errorf("cat -f: status %d, stderr %q", status, stderr)
	}
	if s, _, _ := nsprof(t, nil, "dump", "--summary", out); dropLine(s) != dropLine(wantSummary) {
		t.Errorf("cat of one capture, summary:\n%s\nwant\n%s", s, wantSummary)
	}

	_, stderr, status = nsprof(t, nil, "cat", a, b, "-f", "-o", b)
	if status != 1 || !strings.Contains(stderr, "output would overwrite input") {
		t.Errorf("cat onto an input: status %d, stderr %q", status, stderr)
	}

	stdout, _, status := nsprof(t, nil, "cat", a, b, "-o", "-")
	if status != 0 || !strings.HasPrefix(stdout, "\x5e\x97\xca\xfd") {
		t.Errorf("cat -o -: status %d, %d bytes", status, len(stdout))
	}
}

func TestCatErrors(t *testing.T) {
	dir := t.TempDir()
	a := writeTestCapture(t, dir, "a.syscap")
	data, _ := os.ReadFile(a)
	damaged := filepath.Join(dir, "damaged.syscap")
	if err := os.WriteFile(damaged, data[:len(data)-5], 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		args   []string
		status int
		stderr string
	}{
		{"no inputs", []string{"cat", "-o", "x"}, 2, "requires at least 1 arg(s)"},
		{"stdin input", []string{"cat", "-", "-o", "x"}, 2, "cannot read a capture from standard input"},
		{"missing input", []string{"cat", a, filepath.Join(dir, "nope.syscap"), "-o", filepath.Join(dir, "o1")}, 1, "nope.syscap: no such file"},
		{"not a capture", []string{"cat", "main_test.go", "-o", filepath.Join(dir, "o2")}, 1, "main_test.go: capture: bad magic"},
		{"damaged input", []string{"cat", a, damaged, "-o", filepath.Join(dir, "o3")}, 1, damaged + ": cat: capture: "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, stderr, status := nsprof(t, nil, tt.args...)
			if status != tt.status || !strings.HasPrefix(stderr, "nsprof: ") || !strings.Contains(stderr, tt.stderr) {
				t.Errorf("status %d, stderr %q; want status %d, stderr containing %q", status, stderr, tt.status, tt.stderr)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(dir, "o1")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("cat with a missing input created its output: %v", err)
	}
	// A damaged input is merged up to the damage.
	s, _, _ := nsprof(t, nil, "dump", "--summary", filepath.Join(dir, "o3"))
	if !strings.Contains(s, "\nEXIT                    1 ") {
		t.Errorf("merged up to the damage:\n%s", s)
	}
}

func TestCatRefusesTerminal(t *testing.T) {
	a := writeTestCapture(t, t.TempDir(), "a.syscap")
	// /dev/zero stands in for a terminal: a character device other than
	// /dev/null.
	zero, err := os.OpenFile("/dev/zero", os.O_WRONLY, 0)
	if err != nil {
		t.Skip(err)
	}
	defer zero.Close()
	err = runIO(t.Context(), []string{"cat", a, "-o", "-"}, nil, zero, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "terminal") {
		t.Errorf("cat -o - to a character device: %v", err)
	}
	null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Skip(err)
	}
	defer null.Close()
	if err := runIO(t.Context(), []string{"cat", a, "-o", "-"}, nil, null, io.Discard); err != nil {
		t.Errorf("cat -o - to /dev/null: %v", err)
	}
}

// dropLine returns s without its first line.
func dropLine(s string) string {
	_, rest, _ := strings.Cut(s, "\n")
	return rest
}

// gz compresses s as capture.Writer.AddFileGzip does.
func gz(t testing.TB, s string) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	zw.Write([]byte(s))
	zw.Close()
	return b.Bytes()
}

func itoa(n int) string { return strconv.Itoa(n) }

// BenchmarkDump dumps a capture of 100,000 samples.
func BenchmarkDump(b *testing.B) {
	path := filepath.Join(b.TempDir(), "samples.syscap")
	w, err := capture.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	addrs := []uint64{capture.ContextKernel, 0xffffffff81000000, 0xffffffff81000100, capture.ContextUser, 0x401000, 0x401100, 0x401200, 0x7f0000001000}
	const frames = 100_000
	for i := range frames {
		s := &capture.Sample{FrameHeader: capture.FrameHeader{CPU: int16(i % 8), PID: 1000 + int32(i%16), Time: w.StartTime() + int64(i)*1000}, TID: 1000 + int32(i%16), Addrs: addrs}
		if err := w.WriteFrame(s); err != nil {
			b.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := dump(b.Context(), dumpOptions{Input: path}, nil, io.Discard); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/frames, "ns/frame")
}
