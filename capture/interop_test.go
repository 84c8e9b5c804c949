//go:build linux

package capture

// Interoperability with the reference implementation, libsysprof-capture-4
// from Sysprof 3.46 (Debian 12: apt-get install libsysprof-4-dev gcc
// pkg-config). The C programs in testdata/interop are compiled and run:
//
//   - gen-all.c writes every frame type 1–15 with the C writer and prints
//     the line capture.Dumper must print for each; our Reader must agree
//     line for line and byte for byte (TestInteropWeReadLibsysprof).
//   - read-all.c reads a capture with the C reader and prints the same
//     lines; it must read every frame we write, to the end of the file, as
//     we meant it (TestInteropLibsysprofReadsUs), and it must read what Cat
//     merges (TestInteropLibsysprofReadsCat).
//
// Without gcc, pkg-config or the library these tests are skipped, except in
// CI (CI=true), where they fail.

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"nsprof/internal/testutils"
)

const interopPkg = "sysprof-capture-4"

// interopCC returns the gcc command line flags to build against
// libsysprof-capture-4, or stops the test when something is missing.
func interopCC(t *testing.T) (gcc string, flags []string) {
	t.Helper()
	gcc, err := exec.LookPath("gcc")
	if err != nil {
		testutils.RequireCI(t, "gcc not found (apt-get install gcc): %v", err)
	}
	pc, err := exec.LookPath("pkg-config")
	if err != nil {
		testutils.RequireCI(t, "pkg-config not found (apt-get install pkg-config): %v", err)
	}
	out, err := exec.Command(pc, "--cflags", "--libs", interopPkg).CombinedOutput()
	if err != nil {
		testutils.RequireCI(t, "%s not found (apt-get install libsysprof-4-dev): pkg-config: %v: %s", interopPkg, err, bytes.TrimSpace(out))
	}
	ver, err := exec.Command(pc, "--modversion", interopPkg).Output()
	if err != nil || !bytes.HasPrefix(ver, []byte("3.")) {
		// gen-all.c models 3.46's writer: its JITMAP and buffer flushing,
		// add_file_fd chunk size, allocation depth limits.
		testutils.RequireCI(t, "%s version %q: the interop programs need 3.x (Debian 12's libsysprof-4-dev 3.46): %v", interopPkg, bytes.TrimSpace(ver), err)
	}
	t.Logf("%s %s", interopPkg, bytes.TrimSpace(ver))
	return gcc, strings.Fields(string(out))
}

// interopBuild compiles testdata/interop/<name>.c into dir and returns the
// executable's path.
func interopBuild(t *testing.T, dir, name string) string {
	t.Helper()
	gcc, flags := interopCC(t)
	src, err := filepath.Abs(filepath.Join("testdata", "interop", name+".c"))
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, name)
	args := append([]string{"-std=gnu11", "-O1", "-g", "-Wall", "-Wextra", "-o", bin, src}, flags...)
	args = append(args, "-lm")
	out, err := exec.Command(gcc, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("gcc %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	if len(out) > 0 {
		t.Logf("gcc %s.c warnings:\n%s", name, out)
	}
	return bin
}

// interopRun runs a built program and returns its stdout lines and its
// stderr.
func interopRun(t *testing.T, bin string, args ...string) ([]string, string) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", filepath.Base(bin), strings.Join(args, " "), err, stderr.Bytes())
	}
	return strings.Split(strings.TrimSuffix(string(out), "\n"), "\n"), stderr.String()
}

// interopRead reads the capture at path with our Reader, requiring a clean
// end at the end of the file, and returns the header, the frames and the
// Dumper lines (relative to the header's start time).
func interopRead(t *testing.T, path string) (FileHeader, []Frame, []string) {
	t.Helper()
	r, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	hdr := r.Header()
	d := Dumper{Start: hdr.StartTime}
	var frames []Frame
	var lines []string
	for {
		f, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("%s: frame %d: %v", path, len(frames), err)
		}
		frames = append(frames, f)
		lines = append(lines, string(d.Append(nil, f)))
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if r.Offset() != st.Size() {
		t.Fatalf("%s: reader stopped at offset %d of %d bytes", path, r.Offset(), st.Size())
	}
	return hdr, frames, lines
}

// interopDiff fails the test if got differs from want, showing the first
// differing lines (shortened around the first differing byte).
func interopDiff(t *testing.T, wantName, gotName string, want, got []string) {
	t.Helper()
	short := func(s string, at int) string {
		const ctx = 120
		lo, hi := max(at-ctx, 0), min(at+ctx, len(s))
		out := s[lo:hi]
		if lo > 0 {
			out = "…" + out
		}
		if hi < len(s) {
			out += fmt.Sprintf("…(%d bytes)", len(s))
		}
		return out
	}
	var msg strings.Builder
	bad := 0
	for i := 0; i < max(len(want), len(got)); i++ {
		var w, g string
		if i < len(want) {
			w = want[i]
		}
		if i < len(got) {
			g = got[i]
		}
		if w == g {
			continue
		}
		bad++
		if bad > 8 {
			continue
		}
		at := 0
		for at < len(w) && at < len(g) && w[at] == g[at] {
			at++
		}
		fmt.Fprintf(&msg, "line %d, first difference at byte %d:\n  %-8s %s\n  %-8s %s\n", i+1, at, wantName+":", short(w, at), gotName+":", short(g, at))
	}
	if bad > 0 {
		t.Errorf("%d of %d lines differ (%s: %d lines, %s: %d lines):\n%s", bad, max(len(want), len(got)), wantName, len(want), gotName, len(got), msg.String())
	}
}

// interopReadAll runs read-all on path and returns its frame lines, the
// values of its END line and of the HEADER line on its stderr; a STOP line
// (the C reader stopped early) fails the test.
func interopReadAll(t *testing.T, readAll, path string) (frames []string, start, end int64, nFrames int, offset int64, ok bool) {
	t.Helper()
	lines, stderr := interopRun(t, readAll, path)
	for _, l := range strings.Split(stderr, "\n") {
		if strings.HasPrefix(l, "STOP ") {
			t.Errorf("libsysprof-capture's reader stopped early: %s", l)
		}
		if strings.HasPrefix(l, "HEADER ") {
			if _, err := fmt.Sscanf(l, "HEADER start=%d end=%d", &start, &end); err != nil {
				t.Fatalf("read-all: bad HEADER line %q: %v", l, err)
			}
		}
	}
	n := len(lines)
	var okInt int
	if _, err := fmt.Sscanf(lines[n-1], "END frames=%d offset=%d ok=%d", &nFrames, &offset, &okInt); err != nil {
		t.Fatalf("read-all: bad END line %q: %v", lines[n-1], err)
	}
	return lines[:n-1], start, end, nFrames, offset, okInt == 1
}

func interopFileA(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*31 + i>>8)
	}
	return b
}

func interopFileB(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*17 + 5 + i>>9)
	}
	return b
}

// interopGenAll builds and runs gen-all.c, returning the capture's path,
// the expected Dumper lines and the header times it set.
func interopGenAll(t *testing.T, dir string) (path string, want []string, start, end int64) {
	t.Helper()
	gen := interopBuild(t, dir, "gen-all")
	path = filepath.Join(dir, "gen-all.syscap")
	lines, _ := interopRun(t, gen, path)
	last := lines[len(lines)-1]
	if _, err := fmt.Sscanf(last, "HEADER start=%d end=%d", &start, &end); err != nil {
		t.Fatalf("gen-all: bad last line %q: %v", last, err)
	}
	return path, lines[:len(lines)-1], start, end
}

// interopTypes counts the frame types named in Dumper lines.
func interopTypes(lines []string) map[string]int {
	n := make(map[string]int)
	for _, l := range lines {
		if f := strings.Fields(l); len(f) >= 4 {
			n[f[3]]++
		}
	}
	return n
}

var captureTimeRE = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$`)

// TestInteropWeReadLibsysprof: everything libsysprof-capture 3.46 writes,
// our Reader decodes exactly as the C program that wrote it says it wrote
// it, to the last byte of the file, and embedded files come back intact.
func TestInteropWeReadLibsysprof(t *testing.T) {
	dir := t.TempDir()
	path, want, start, end := interopGenAll(t, dir)

	hdr, frames, got := interopRead(t, path)
	interopDiff(t, "gen-all.c", "Reader", want, got)

	if hdr.StartTime != start || hdr.EndTime != end {
		t.Errorf("header time range %d..%d, libsysprof-capture wrote %d..%d", hdr.StartTime, hdr.EndTime, start, end)
	}
	if hdr.Version != 1 || hdr.BigEndian != (binary.NativeEndian.Uint16([]byte{0, 1}) == 1) || !captureTimeRE.MatchString(hdr.CaptureTime) {
		t.Errorf("header %+v", hdr)
	}
	types := interopTypes(got)
	for ft := TypeTimestamp; ft <= TypeOverlay; ft++ {
		if types[ft.String()] == 0 {
			t.Errorf("gen-all.c wrote no %s frame", ft)
		}
	}

	var fs Files
	for _, f := range frames {
		if c, ok := f.(*FileChunk); ok {
			fs.Add(c)
		}
	}
	pathB := make([]byte, 255) // gen-all's 300-byte path, cut to 255 by the library
	for i := range pathB {
		pathB[i] = byte('a' + i%26)
		if i%10 == 0 {
			pathB[i] = '/'
		}
	}
	for _, tc := range []struct {
		path string
		data []byte
	}{
		{"/embedded/a.bin", interopFileA(41000)},
		{string(pathB), interopFileB(40000)},
	} {
		b, ok := fs.Raw(tc.path)
		if !ok {
			t.Errorf("embedded file %q missing; have %v", tc.path, fs.List())
			continue
		}
		if !bytes.Equal(b, tc.data) {
			t.Errorf("embedded file %q: %d bytes differ from the %d written", tc.path, len(b), len(tc.data))
		}
	}
	for _, e := range fs.List() {
		if !e.Complete {
			t.Errorf("embedded file %q not complete", e.Path)
		}
	}

	// The C reader agrees with the C writer: this checks read-all.c, which
	// the next tests rely on, against gen-all.c.
	readAll := interopBuild(t, dir, "read-all")
	cLines, cStart, cEnd, n, off, ok := interopReadAll(t, readAll, path)
	interopDiff(t, "gen-all.c", "read-all.c", want, cLines)
	st, _ := os.Stat(path)
	if !ok || n != len(want) || off != st.Size() || cStart != start || cEnd != end {
		t.Errorf("read-all: ok=%t frames=%d offset=%d start=%d end=%d; want ok, %d frames, offset %d, %d..%d", ok, n, off, cStart, cEnd, len(want), st.Size(), start, end)
	}
}

// interopOurs writes, with our Writer and default encoding options, a
// capture of every type 1–15 (plus a Trace), and returns the frames
// libsysprof-capture must read back.
func interopOurs(t *testing.T, path string) (want []Frame, start, end int64) {
	t.Helper()
	start = 2_000_000_000_000
	clock := start + 5_000_000_000
	w, err := CreateWithOptions(path, WriterOptions{
		StartTime:   start,
		Clock:       func() int64 { return clock },
		CaptureTime: time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC),
	})
	if err != nil {
		t.Fatal(err)
	}
	tm := start
	h := func(dt int64, cpu int16, pid int32) FrameHeader {
		tm += dt
		return FrameHeader{CPU: cpu, PID: pid, Time: tm}
	}
	put := func(f Frame, exp Frame) {
		t.Helper()
		if err := w.WriteFrame(f); err != nil {
			t.Fatalf("write %s: %v", f.Type(), err)
		}
		if exp == nil {
			exp = f
		}
		want = append(want, exp)
	}
	const pid, tid = 4242, 4244

	put(&Timestamp{FrameHeader: h(1, 3, -1)}, nil)
	put(&Timestamp{FrameHeader: FrameHeader{CPU: 32767, PID: 0, Time: start - 1000}}, nil)
	put(&Timestamp{FrameHeader: h(1000, -32768, math.MaxInt32)}, nil)
	put(&Process{FrameHeader: h(1000, -1, pid), Cmdline: "/usr/bin/demo --name=\"x y\" C:\\tmp\tTAB é日本 ✓ \x01\x7f"}, nil)
	put(&Process{FrameHeader: h(1000, 0, pid+1)}, nil)
	put(&Map{FrameHeader: h(1000, 1, pid), Start: 0x400000, End: 0x401000, Offset: 0x1000, Inode: 123456, Filename: "/usr/bin/demo"}, nil)
	put(&Map{FrameHeader: h(1000, 1, pid), Start: 0x7f0000000000, End: 0x7f0000100000, Inode: 42, Filename: "/lib/libc.so.6", BuildID: "0123456789ABCDEFabcdef0123456789abcdef01"},
		&Map{FrameHeader: FrameHeader{CPU: 1, PID: pid, Time: tm}, Start: 0x7f0000000000, End: 0x7f0000100000, Inode: 42, Filename: "/lib/libc.so.6", BuildID: "0123456789abcdefabcdef0123456789abcdef01"})
	long := strings.Repeat("/d", MaxFrameLen)[:MaxFrameLen-mapFixed-1] // the longest MAP frame
	put(&Map{FrameHeader: h(1000, -1, pid), Start: 0x7fff00000000, End: 0x7fffffffffff, Offset: 0xffffffffffff0000, Inode: math.MaxUint64, Filename: long}, nil)
	put(&Map{FrameHeader: h(1000, 2, pid)}, nil)
	put(&Fork{FrameHeader: h(1000, -1, pid), ChildPID: pid + 1}, nil)
	put(&Exit{FrameHeader: h(1000, 5, pid+1)}, nil)

	jit := func(name string) uint64 {
		a, err := w.AddJITMap(name)
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	foo, bar, empty := jit("js::foo"), jit("js::bar é"), jit("")
	if jit("js::foo") != foo {
		t.Fatal("AddJITMap does not deduplicate")
	}
	addrs := []uint64{ContextKernel, 0xffffffff81000010, ContextUser, 0x401234, foo, bar, empty, 0x7fffffffffff, 0, ContextHV, ContextGuest, ContextGuestKernel, ContextGuestUser, math.MaxUint64}
	put(&Sample{FrameHeader: h(1000, 2, pid), TID: tid, Addrs: addrs}, nil)
	put(&Sample{FrameHeader: h(1000, -1, math.MaxInt32), TID: math.MinInt32}, nil)
	// A Trace is written as a SAMPLE with the entering bit, which 3.46
	// reads as a plain sample.
	put(&Trace{FrameHeader: h(1000, 0, pid), TID: tid, Entering: true, Addrs: []uint64{foo, 0x401000}},
		&Sample{FrameHeader: FrameHeader{CPU: 0, PID: pid, Time: tm}, TID: tid, Addrs: []uint64{foo, 0x401000}})
	put(&Trace{FrameHeader: h(1000, 0, pid), TID: tid, Entering: false, Addrs: []uint64{bar}},
		&Sample{FrameHeader: FrameHeader{CPU: 0, PID: pid, Time: tm}, TID: tid, Addrs: []uint64{bar}})
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	want = append(want, &JITMap{FrameHeader: FrameHeader{CPU: -1, PID: int32(os.Getpid()), Time: clock},
		Entries: []JITEntry{{foo, "js::foo"}, {bar, "js::bar é"}, {empty, ""}}})

	// Enough samples to go through the 256 KiB buffer more than once.
	for i := range 300 {
		a := make([]uint64, 100+i%50)
		for j := range a {
			a[j] = 0x500000 + uint64(16*(i+j))
		}
		a[len(a)/2] = foo
		put(&Sample{FrameHeader: h(100, int16(i%4), pid), TID: tid, Addrs: a}, nil)
	}

	id, err := w.RequestCounters(10)
	if err != nil || id != 1 {
		t.Fatalf("RequestCounters = %d, %v", id, err)
	}
	counters := []Counter{
		{Category: "Memory", Name: "Used", Description: "Memory used", ID: 1, Type: CounterInt64, Value: IntValue(-7)},
		{Category: "CPU Percent", Name: "Total CPU 0", Description: "Total CPU usage", ID: 2, Type: CounterDouble, Value: DoubleValue(12.5)},
		{Category: "category-of-exactly-31-bytes-xx", Name: "name-of-exactly-31-bytes-xxxxxx", Description: "description-of-exactly-51-bytes-xxxxxxxxxxxxxxxxxxx", ID: 3, Type: CounterInt64, Value: IntValue(math.MinInt64)},
		{ID: 4, Type: CounterDouble, Value: DoubleValue(math.Copysign(0, -1))},
		{Category: "Net", Name: "rx é", Description: "bytes/s", ID: 5, Type: CounterDouble, Value: DoubleValue(1234567)},
		{Category: "Net", Name: "tx", Description: "\"quoted\"\n", ID: 6, Type: CounterInt64, Value: IntValue(math.MaxInt64)},
		{Category: "Power", Name: "RAPL", Description: "W", ID: 7, Type: CounterDouble, Value: DoubleValue(0.1 + 0.2)},
		{Category: "Power", Name: "tiny", ID: 8, Type: CounterDouble, Value: DoubleValue(1e-7)},
		{Category: "Power", Name: "huge", ID: 9, Type: CounterDouble, Value: DoubleValue(6.02e23)},
		{Category: "a category longer than 31 bytes, cut", Name: "ops", ID: 10, Type: CounterInt64},
	}
	wantCounters := slices.Clone(counters)
	wantCounters[9].Category = "a category longer than 31 bytes"
	put(&CounterDefine{FrameHeader: h(1000, -1, -1), Counters: counters},
		&CounterDefine{FrameHeader: FrameHeader{CPU: -1, PID: -1, Time: tm}, Counters: wantCounters})
	put(&CounterSet{FrameHeader: h(1000, 4, pid), Updates: []CounterUpdate{
		{1, IntValue(1 << 20)}, {2, DoubleValue(99.25)}, {3, IntValue(-1)}, {4, DoubleValue(0.0001)}, {5, DoubleValue(123456)},
		{6, IntValue(math.MinInt64)}, {7, DoubleValue(1e21)}, {8, DoubleValue(-2.5e-5)}, {9, DoubleValue(1.0 / 3)}, {10, IntValue(42)},
	}}, nil)
	put(&CounterSet{FrameHeader: h(1000, -1, -1), Updates: []CounterUpdate{{2, DoubleValue(-0.5)}, {5, DoubleValue(100)}, {9, DoubleValue(5e-324)}}}, nil)
	put(&CounterSet{FrameHeader: h(1000, -1, -1), Updates: []CounterUpdate{
		{10, 7}, {9, DoubleValue(1.5e300)}, {8, DoubleValue(-1e-300)}, {7, DoubleValue(2)}, {6, 0}, {5, DoubleValue(1e6)}, {4, DoubleValue(999999)}, {3, IntValue(-42)},
	}}, nil)

	msg := strings.Repeat("abcdefghijklmnopqrstuvwxyz0123456789 \t\"\\", 75)
	put(&Mark{FrameHeader: h(1000, 1, pid), Duration: 1_500_000_000, Group: "nsprof-group", Name: "frame", Message: msg}, nil)
	put(&Mark{FrameHeader: h(1000, -1, pid), Group: "a-group-name-longer-than-23-bytes", Name: "a-very-long-mark-name-that-exceeds-thirty-nine-bytes"},
		&Mark{FrameHeader: FrameHeader{CPU: -1, PID: pid, Time: tm}, Group: "a-group-name-longer-tha", Name: "a-very-long-mark-name-that-exceeds-thir"})
	// Unlike strlcpy, our Writer does not cut a UTF-8 sequence.
	put(&Mark{FrameHeader: h(1000, -1, pid), Duration: 1, Group: "日本語日本語日本語", Name: "x名前名前名前名前名前名前名前", Message: "é"},
		&Mark{FrameHeader: FrameHeader{CPU: -1, PID: pid, Time: tm}, Duration: 1, Group: "日本語日本語日", Name: "x名前名前名前名前名前名前", Message: "é"})
	put(&Metadata{FrameHeader: h(1000, -1, -1), ID: "org.nsprof.test-key-that-is-much-longer-than-forty-bytes", Value: "line1\nline2\ttab \"quoted\" é"},
		&Metadata{FrameHeader: FrameHeader{CPU: -1, PID: -1, Time: tm}, ID: "org.nsprof.test-key-that-is-much-longer", Value: "line1\nline2\ttab \"quoted\" é"})
	put(&Metadata{FrameHeader: h(1000, 0, pid), ID: "empty"}, nil)
	put(&Log{FrameHeader: h(1000, 3, pid), Severity: LogWarning, Domain: "Gtk-domain-that-is-way-longer-than-32-bytes", Message: "hello\nworld"},
		&Log{FrameHeader: FrameHeader{CPU: 3, PID: pid, Time: tm}, Severity: LogWarning, Domain: "Gtk-domain-that-is-way-longer-t", Message: "hello\nworld"})
	put(&Log{FrameHeader: h(1000, -1, -1), Severity: 0xFFFF}, nil)

	// Files: 100 000 bytes in 32 KiB frames, an empty file, a direct chunk.
	fh := h(1000, -1, pid)
	data := interopFileA(100_000)
	if err := w.AddFileBytes(fh, "/embedded/ours.bin", data); err != nil {
		t.Fatal(err)
	}
	for off := 0; off < len(data); off += fileChunkSize {
		n := min(fileChunkSize, len(data)-off)
		want = append(want, &FileChunk{FrameHeader: fh, Path: "/embedded/ours.bin", Data: data[off : off+n], IsLast: off+n == len(data)})
	}
	if err := w.AddFileBytes(fh, "/embedded/empty", nil); err != nil {
		t.Fatal(err)
	}
	want = append(want, &FileChunk{FrameHeader: fh, Path: "/embedded/empty", IsLast: true})
	put(&FileChunk{FrameHeader: h(1000, 2, pid), Path: "/" + strings.Repeat("p", 300), Data: interopFileB(MaxFileChunkData), IsLast: true},
		&FileChunk{FrameHeader: FrameHeader{CPU: 2, PID: pid, Time: tm}, Path: "/" + strings.Repeat("p", 254), Data: interopFileB(MaxFileChunkData), IsLast: true})

	big := make([]uint64, 5000)
	for i := range big {
		big[i] = 0x600000 + uint64(8*i)
	}
	put(&Allocation{FrameHeader: h(1000, 2, pid), TID: tid, Addr: 0x55550000, Size: 4096, Addrs: big[:5]}, nil)
	put(&Allocation{FrameHeader: h(1000, 2, pid), TID: tid, Addr: 0x55550000}, nil)
	put(&Allocation{FrameHeader: h(1000, -1, pid), TID: tid, Addr: 0xffff800000000000, Size: 1 << 40, Addrs: big}, nil)
	put(&Allocation{FrameHeader: h(1000, 0, pid), TID: math.MinInt32, Addr: 1, Size: -1, Addrs: []uint64{foo}}, nil)

	put(&Overlay{FrameHeader: h(1000, -1, pid), Layer: 3, Src: "/var/lib/containers/storage/overlay/abc/diff", Dst: "/"}, nil)
	put(&Overlay{FrameHeader: h(1000, -1, pid), Layer: 255}, nil)
	put(&Overlay{FrameHeader: h(1000, -1, pid), Layer: 7, Src: "/src é", Dst: "/mnt/dst"}, nil)

	put(&Mark{FrameHeader: FrameHeader{CPU: -1, PID: -1, Time: start + 3_000_000_000}, Duration: 1_000_000_000, Group: "last", Name: "last", Message: "late"}, nil)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return want, start, clock
}

func interopDump(start int64, frames []Frame) []string {
	d := Dumper{Start: start}
	lines := make([]string, len(frames))
	for i, f := range frames {
		lines[i] = string(d.Append(nil, f))
	}
	return lines
}

// TestInteropLibsysprofReadsUs: libsysprof-capture 3.46's reader reads every
// frame our Writer writes, to the end of the file, with the values we wrote.
func TestInteropLibsysprofReadsUs(t *testing.T) {
	dir := t.TempDir()
	readAll := interopBuild(t, dir, "read-all")
	path := filepath.Join(dir, "ours.syscap")
	frames, start, end := interopOurs(t, path)
	want := interopDump(start, frames)

	got, cStart, cEnd, n, off, ok := interopReadAll(t, readAll, path)
	interopDiff(t, "Writer", "read-all.c", want, got)
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if !ok || n != len(want) || off != st.Size() {
		t.Errorf("libsysprof-capture read %d frames to offset %d (ok=%t); want all %d frames, to the end at %d", n, off, ok, len(want), st.Size())
	}
	if cStart != start || cEnd != end {
		t.Errorf("libsysprof-capture sees time range %d..%d; want %d..%d", cStart, cEnd, start, end)
	}
	types := interopTypes(got)
	for ft := TypeTimestamp; ft <= TypeOverlay; ft++ {
		if types[ft.String()] == 0 {
			t.Errorf("no %s frame read", ft)
		}
	}

	// And our own Reader reads the same.
	_, _, ourLines := interopRead(t, path)
	interopDiff(t, "Writer", "Reader", want, ourLines)
}

var (
	jitEntryRE = regexp.MustCompile(` (0x[0-9a-f]+)=("(?:[^"\\]|\\.)*")`)
	ctrdefIDRE = regexp.MustCompile(`\[id=(\d+) `)
)

// TestInteropLibsysprofReadsCat merges a capture written by libsysprof-
// capture with one written by us, both using JIT addresses and counter ids
// from 1, and checks through libsysprof-capture's reader that the merge
// holds every input frame, with counter ids renumbered without collision,
// JIT addresses that still name the same functions, and the time range of
// both inputs.
func TestInteropLibsysprofReadsCat(t *testing.T) {
	dir := t.TempDir()
	pathA, _, startA, endA := interopGenAll(t, dir)
	readAll := interopBuild(t, dir, "read-all")

	// B starts before A and ends before A ends.
	pathB := filepath.Join(dir, "b.syscap")
	startB := startA - 100_000_000_000
	endB := startA - 50_000_000_000
	w, err := CreateWithOptions(pathB, WriterOptions{StartTime: startB, Clock: func() int64 { return endB }})
	if err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	foo, err := w.AddJITMap("js::foo") // also in A
	must(err)
	only, err := w.AddJITMap("b::only")
	must(err)
	id, err := w.RequestCounters(9)
	must(err)
	var defs []Counter
	var sets []CounterUpdate
	for i := range 9 {
		defs = append(defs, Counter{Category: "B", Name: fmt.Sprintf("b%d", i), ID: id + uint32(i), Type: CounterType(i % 2), Value: CounterValue(i)})
		sets = append(sets, CounterUpdate{ID: id + uint32(i), Value: CounterValue(100 + i)})
	}
	hb := FrameHeader{CPU: 1, PID: 777, Time: startB + 1000}
	must(w.WriteFrame(&Process{FrameHeader: hb, Cmdline: "b"}))
	must(w.WriteFrame(&Sample{FrameHeader: hb, TID: 778, Addrs: []uint64{ContextUser, foo, only, 0x1234, JITMapMark | 3}}))
	must(w.WriteFrame(&Trace{FrameHeader: hb, TID: 778, Entering: true, Addrs: []uint64{only}}))
	must(w.WriteFrame(&CounterDefine{FrameHeader: hb, Counters: defs}))
	must(w.WriteFrame(&CounterSet{FrameHeader: hb, Updates: sets}))
	must(w.WriteFrame(&Allocation{FrameHeader: hb, TID: 778, Addr: 0x10, Size: 16, Addrs: []uint64{only}}))
	must(w.Close())

	// Merge.
	pathOut := filepath.Join(dir, "merged.syscap")
	out, err := os.Create(pathOut)
	must(err)
	fa, err := os.Open(pathA)
	must(err)
	defer fa.Close()
	fb, err := os.Open(pathB)
	must(err)
	defer fb.Close()
	must(CatFiles(out, []io.ReadSeeker{fa, fb}, []string{pathA, pathB}, CatOptions{}))
	must(out.Close())

	// What libsysprof-capture reads in the merge.
	got, cStart, cEnd, n, off, ok := interopReadAll(t, readAll, pathOut)
	st, err := os.Stat(pathOut)
	must(err)
	if !ok || n != len(got) || off != st.Size() {
		t.Errorf("libsysprof-capture read %d frames to offset %d (ok=%t) of %d bytes", n, off, ok, st.Size())
	}

	// Header: the earliest start and the latest end of the inputs.
	hdrOut, _, _ := interopRead(t, pathOut)
	wantStart, wantEnd := min(startA, startB), max(endA, endB)
	if cStart != wantStart || hdrOut.StartTime != wantStart || hdrOut.EndTime != wantEnd {
		t.Errorf("merged time range: libsysprof-capture start %d, header %d..%d; want %d..%d", cStart, hdrOut.StartTime, hdrOut.EndTime, wantStart, wantEnd)
	}
	if cEnd < wantEnd {
		t.Errorf("libsysprof-capture end time %d < %d", cEnd, wantEnd)
	}

	// The merged JIT map, as libsysprof-capture reads it.
	outJIT := make(map[string]uint64)
	outAddrs := make(map[uint64]bool)
	var rest []string // lines other than JITMAP
	for _, l := range got {
		if strings.Fields(l)[3] != "JITMAP" {
			rest = append(rest, l)
			continue
		}
		for _, m := range jitEntryRE.FindAllStringSubmatch(l, -1) {
			a, err := strconv.ParseUint(m[1], 0, 64)
			must(err)
			name, err := strconv.Unquote(m[2])
			must(err)
			if _, dup := outJIT[name]; dup || outAddrs[a] {
				t.Errorf("merged JIT map names %q or %#x twice", name, a)
			}
			outJIT[name], outAddrs[a] = a, true
		}
	}

	// Expected: every input frame but JITMAPs, in order, with JIT addresses
	// and counter ids translated through what the merge says.
	_, framesA, _ := interopRead(t, pathA)
	_, framesB, _ := interopRead(t, pathB)
	var outIDs []uint32
	for _, l := range rest {
		if strings.Fields(l)[3] == "CTRDEF" {
			for _, m := range ctrdefIDRE.FindAllStringSubmatch(l, -1) {
				v, err := strconv.ParseUint(m[1], 10, 32)
				must(err)
				outIDs = append(outIDs, uint32(v))
			}
		}
	}
	if len(outIDs) != 10+9 {
		t.Fatalf("merged capture defines %d counters, want 19", len(outIDs))
	}
	seen := make(map[uint32]bool)
	for _, v := range outIDs {
		if seen[v] || v == 0 {
			t.Errorf("merged counter ids collide: %v", outIDs)
			break
		}
		seen[v] = true
	}
	var wantFrames []Frame
	counts := make(map[FrameType]int)
	next := 0
	for _, in := range [][]Frame{framesA, framesB} {
		jitName := make(map[uint64]string)
		for _, f := range in {
			if m, ok := f.(*JITMap); ok {
				for _, e := range m.Entries {
					jitName[e.Addr] = e.Name
				}
			}
		}
		ids := make(map[uint32]uint32)
		tr := func(a []uint64) {
			for i, v := range a {
				if name, ok := jitName[v]; ok {
					na, ok := outJIT[name]
					if !ok {
						t.Errorf("JIT name %q missing from the merged JIT map", name)
					}
					a[i] = na
				}
			}
		}
		for _, f := range in {
			switch f := f.(type) {
			case *JITMap:
				continue
			case *Sample:
				tr(f.Addrs)
			case *Allocation:
				tr(f.Addrs)
			case *CounterDefine:
				for i := range f.Counters {
					ids[f.Counters[i].ID] = outIDs[next]
					f.Counters[i].ID = outIDs[next]
					next++
				}
			case *CounterSet:
				for i := range f.Updates {
					f.Updates[i].ID = ids[f.Updates[i].ID]
				}
			}
			counts[f.Type()]++
			wantFrames = append(wantFrames, f)
		}
	}
	if outIDs[0] == outIDs[10] || outIDs[10] == id {
		t.Errorf("B's counters kept their ids: %v", outIDs)
	}
	interopDiff(t, "inputs translated", "read-all.c(merge)", interopDump(wantStart, wantFrames), rest)
	gotCounts := interopTypes(rest)
	for ft, c := range counts {
		if gotCounts[ft.String()] != c {
			t.Errorf("merge has %d %s frames, inputs %d", gotCounts[ft.String()], ft, c)
		}
	}
}

// interopNormalize returns a copy of the frame b (decoded as f, little-
// endian) with the bytes the format leaves unspecified set to zero:
// alignment padding, bytes after the NUL in fixed-size string arrays and
// bitfield padding the C writer does not set. libsysprof-capture reuses its
// buffer without clearing it, so those bytes hold stale data in its files.
func interopNormalize(b []byte, f Frame) []byte {
	b = bytes.Clone(b)
	zero := func(from, to int) {
		to = min(to, len(b))
		if from < to {
			clear(b[from:to])
		}
	}
	afterNUL := func(from, to int) {
		if i := bytes.IndexByte(b[from:to], 0); i >= 0 {
			zero(from+i+1, to)
		}
	}
	end := len(b)
	switch f := f.(type) {
	case *Timestamp, *Exit:
		end = FrameHeaderSize
	case *Sample:
		zero(26, 28) // n_addrs:16 | padding1:16, padding1 not set by add_sample
		end = sampleFixed + 8*len(f.Addrs)
	case *Map:
		end = mapFixed + len(f.Filename) + 1
		if f.BuildID != "" {
			end += 1 + len(f.BuildID) + 1
		}
	case *Process:
		end = processFixed + len(f.Cmdline) + 1
	case *Fork:
		end = forkFixed
	case *JITMap:
		end = jitmapFixed
		for _, e := range f.Entries {
			end += 8 + len(e.Name) + 1
		}
	case *CounterDefine:
		for i := range f.Counters {
			c := ctrdefFixed + counterSize*i
			afterNUL(c, c+32)
			afterNUL(c+32, c+64)
			afterNUL(c+64, c+116)
		}
		end = ctrdefFixed + counterSize*len(f.Counters)
	case *CounterSet:
		end = ctrsetFixed + ctrsetGroupSize*((len(f.Updates)+7)/8)
	case *Mark:
		afterNUL(32, 56)
		afterNUL(56, 96)
		end = markFixed + len(f.Message) + 1
	case *Metadata:
		afterNUL(24, 64)
		end = metadataFixed + len(f.Value) + 1
	case *Log:
		afterNUL(32, 64)
		end = logFixed + len(f.Message) + 1
	case *FileChunk:
		afterNUL(28, 284)
		end = fileChunkFixed + len(f.Data)
	case *Allocation:
		end = allocationFixed + 8*len(f.Addrs)
	case *Overlay:
		zero(25, 28) // layer:8 | padding:24, padding not set by add_overlay
		end = overlayFixed + len(f.Src) + 1 + len(f.Dst) + 1
	}
	zero(end, len(b))
	return b
}

// TestInteropSameBytes: re-encoding every frame libsysprof-capture wrote
// gives the same frame lengths and the same bytes, but for those the format
// leaves unspecified; the file header is identical too.
func TestInteropSameBytes(t *testing.T) {
	if binary.NativeEndian.Uint16([]byte{1, 0}) != 1 {
		t.Skip("interopNormalize knows little-endian bitfields only")
	}
	dir := t.TempDir()
	path, _, _, _ := interopGenAll(t, dir)
	theirs, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	hdr, frames, _ := interopRead(t, path)
	ct, err := time.Parse("2006-01-02T15:04:05Z", hdr.CaptureTime)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	w, err := NewWriterWithOptions(&buf, WriterOptions{StartTime: hdr.StartTime, EndTime: hdr.EndTime, CaptureTime: ct, Clock: func() int64 { return math.MinInt64 }})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range frames {
		if err := w.WriteFrame(f); err != nil {
			t.Fatalf("write %s: %v", f.Type(), err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	ours := buf.Bytes()
	if !bytes.Equal(ours[:HeaderSize], theirs[:HeaderSize]) {
		t.Errorf("file header differs:\n ours   % x\n theirs % x", ours[:HeaderSize], theirs[:HeaderSize])
	}
	po, pt := HeaderSize, HeaderSize
	bad := 0
	for i, f := range frames {
		lo := int(binary.LittleEndian.Uint16(ours[po:]))
		lt := int(binary.LittleEndian.Uint16(theirs[pt:]))
		if lo != lt {
			t.Fatalf("frame %d (%s): length %d, libsysprof-capture wrote %d", i, f.Type(), lo, lt)
		}
		o := interopNormalize(ours[po:po+lo], f)
		th := interopNormalize(theirs[pt:pt+lt], f)
		if !bytes.Equal(o, th) {
			at := 0
			for o[at] == th[at] {
				at++
			}
			if bad++; bad <= 5 {
				t.Errorf("frame %d (%s, %d bytes) differs from byte %d:\n ours   % x\n theirs % x", i, f.Type(), lo, at, o[at:min(at+32, lo)], th[at:min(at+32, lt)])
			}
		}
		po += lo
		pt += lt
	}
	if po != len(ours) || pt != len(theirs) {
		t.Errorf("frames end at %d (ours) and %d (theirs) of %d and %d bytes", po, pt, len(ours), len(theirs))
	}
}

// TestInteropReadAllDetectsEarlyStop: read-all.c reports a 3.46 reader that
// stops before the end of the file, here at a TRACE frame (type 16), which
// only a Writer with NewFrameTypes writes.
func TestInteropReadAllDetectsEarlyStop(t *testing.T) {
	dir := t.TempDir()
	readAll := interopBuild(t, dir, "read-all")
	path := filepath.Join(dir, "new-types.syscap")
	w, err := CreateWithOptions(path, WriterOptions{NewFrameTypes: true, StartTime: 1000})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []Frame{
		&Timestamp{FrameHeader: FrameHeader{CPU: -1, PID: -1, Time: 2000}},
		&Trace{FrameHeader: FrameHeader{CPU: -1, PID: 1, Time: 3000}, TID: 1, Entering: true, Addrs: []uint64{1}},
		&Timestamp{FrameHeader: FrameHeader{CPU: -1, PID: -1, Time: 4000}},
	} {
		if err := w.WriteFrame(f); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	lines, stderr := interopRun(t, readAll, path)
	want := []string{"+0.000001000 cpu=-1 pid=-1 TIMESTAMP", fmt.Sprintf("END frames=1 offset=%d ok=0", HeaderSize+FrameHeaderSize)}
	interopDiff(t, "want", "read-all.c", want, lines)
	if !strings.Contains(stderr, "STOP peek_type false at offset=280 type=16") {
		t.Errorf("read-all stderr does not report the stop at the TRACE frame:\n%s", stderr)
	}
}
