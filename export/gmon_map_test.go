package export

import (
	"bytes"
	"encoding/hex"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"nsprof/analyze"
	"nsprof/capture"
	"nsprof/internal/testutils"
	"nsprof/symbol"
)

// gmonTestLib builds a small shared library with functions gm_a and
// gm_b, linked at 0x200000 so that no address is its file offset, and
// returns it opened, with their link-time addresses.
func gmonTestLib(t *testing.T) (f *symbol.File, path string, a, b uint64) {
	t.Helper()
	gcc := testutils.LookPathOrSkip(t, "gcc")
	dir := t.TempDir()
	src, path := filepath.Join(dir, "gm.c"), filepath.Join(dir, "libgm.so")
	code := "volatile int s; void gm_a(void) { s++; s++; } void gm_b(void) { gm_a(); s--; }\n"
	if err := os.WriteFile(src, []byte(code), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(gcc, "-O1", "-fPIC", "-shared", "-Wl,--build-id", "-Wl,-Ttext-segment=0x200000", "-o", path, src).CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, out)
	}
	f, err := symbol.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	syms, err := f.Funcs(func(n string) bool { return n == "gm_a" || n == "gm_b" })
	if err != nil || len(syms) != 2 {
		t.Fatalf("gm_a, gm_b: %v %v", syms, err)
	}
	return f, path, syms[0].Addr, syms[1].Addr
}

// TestGmonAddresses writes a capture in which two processes map a
// library at bases no link-time address is near, one with the file's
// build-id and one with another, and checks the gmon.out Gmon writes:
// bins and arcs at the file's link-time addresses, a kernel frame
// counted for the user frame below it, calls from outside the file and
// the samples and calls of the other build-id counted, not written.
func TestGmonAddresses(t *testing.T) {
	f, path, a, b := gmonTestLib(t)
	// runtime returns where vaddr is in a mapping of the whole file
	// from offset 0 at base.
	runtime := func(base, vaddr uint64) uint64 {
		off, ok := f.FileOffset(vaddr)
		if !ok {
			t.Fatalf("no file offset of %#x", vaddr)
		}
		return base + off
	}
	const base10, base20, host = 0x7f12_3456_0000, 0x7f65_4321_0000, 0x55_5555_4000
	w, buf, must := gmonCapture(t)
	h := func(pid int32) capture.FrameHeader { return capture.FrameHeader{PID: pid, Time: 1e9 + 1} }
	must(w.AddMetadata(1e9, capture.MetaEvent, "cpu-clock"))
	must(w.AddMetadata(1e9, capture.MetaFrequency, "250"))
	must(w.AddMetadata(1e9, capture.MetaCalls, "1"))
	must(w.WriteFrame(&capture.Map{FrameHeader: h(10), Start: host, End: host + 0x1000, Filename: "/usr/bin/host"}))
	must(w.WriteFrame(&capture.Map{FrameHeader: h(10), Start: base10, End: base10 + 0x10_0000, Filename: "/opt/x/libgm.so", BuildID: hex.EncodeToString(f.BuildID())}))
	must(w.WriteFrame(&capture.Map{FrameHeader: h(20), Start: base20, End: base20 + 0x10_0000, Filename: "/other/libgm.so", BuildID: "deadbeef"}))
	sample := func(pid int32, addrs ...uint64) {
		must(w.WriteFrame(&capture.Sample{FrameHeader: h(pid), TID: pid, Addrs: addrs}))
	}
	for range 3 {
		sample(10, capture.ContextUser, runtime(base10, a)+1, runtime(base10, b)+5, host+0x10)
	}
	sample(10, capture.ContextKernel, 0xffff_ffff_8100_0000, capture.ContextUser, runtime(base10, b), host+0x10)
	sample(10, capture.ContextUser, host+0x10)
	sample(20, capture.ContextUser, runtime(base20, a))
	sample(20, capture.ContextUser, runtime(base20, a))
	site := runtime(base10, b) + 5 // a return address in gm_b
	var calls []byte
	for _, c := range []capture.Call{
		{PID: 10, TID: 10, Callee: runtime(base10, a), Site: site, Count: 7},
		{PID: 10, TID: 10, Callee: runtime(base10, b), Site: host + 0x20, Count: 2},
		{PID: 20, TID: 20, Callee: runtime(base20, a), Site: runtime(base20, b) + 5, Count: 5},
	} {
		c.Time = 1e9 + 2
		calls = capture.AppendCall(calls, c)
	}
	must(w.AddFileBytes(h(10), capture.CallsFile, calls))
	must(w.Close())
	p, err := analyze.LoadBytes(buf.Bytes(), analyze.LoadOptions{NoHostFiles: true})
	if err != nil {
		t.Fatal(err)
	}

	gmon := func(t *testing.T, pids ...int32) (*GmonStats, []byte, error) {
		t.Helper()
		v, err := p.View(analyze.ViewOptions{AllKinds: true, Filter: analyze.Filter{PIDs: pids}})
		if err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		st, err := Gmon(&out, v, GmonOptions{File: f, Path: path})
		return st, out.Bytes(), err
	}
	st, out, err := gmon(t)
	if err != nil {
		t.Fatal(err)
	}
	d := decodeGmon(t, out, 8, f.ByteOrder())
	if len(d.hists) != 1 {
		t.Fatalf("%d histograms", len(d.hists))
	}
	hist := d.hists[0]
	if hist.rate != 250 || hist.low > a || hist.high <= b || (hist.high-hist.low)/uint64(hist.size) != 4 {
		t.Errorf("histogram %#x..%#x, %d bins at %d Hz: want 4-byte bins over gm_a %#x and gm_b %#x at 250 Hz", hist.low, hist.high, hist.size, hist.rate, a, b)
	}
	got := map[uint64]uint16{}
	for i, n := range hist.bins {
		if n > 0 {
			got[hist.low+uint64(i)*4] = n
		}
	}
	want := map[uint64]uint16{(a + 1) &^ 3: 3, b &^ 3: 1}
	if len(got) != len(want) || got[(a+1)&^3] != 3 || got[b&^3] != 1 {
		t.Errorf("bins %#x, want %#x", got, want)
	}
	if len(d.arcs) != 1 || d.arcs[0] != (gmonArc{From: b + 5, Self: a, Count: 7}) {
		t.Errorf("arcs %#x, want gm_b+5 -> gm_a (%#x -> %#x) 7 times", d.arcs, b+5, a)
	}
	if st.Samples != 4 || st.Calls != 7 || st.Arcs != 1 || st.ForeignCalls != 2 || st.ForeignArcs != 1 ||
		st.MismatchedSamples != 2 || st.MismatchedCalls != 5 || len(st.Mismatched) != 1 || st.Processes != 1 || st.Outside != 0 {
		t.Errorf("stats %+v", st)
	}

	// A histogram bounded to 8 bins: coarser bins, the same samples.
	v, err := p.View(analyze.ViewOptions{AllKinds: true})
	if err != nil {
		t.Fatal(err)
	}
	var small bytes.Buffer
	st, err = Gmon(&small, v, GmonOptions{File: f, Path: path, MaxBins: 8})
	if err != nil {
		t.Fatal(err)
	}
	hist = decodeGmon(t, small.Bytes(), 8, f.ByteOrder()).hists[0]
	sum := 0
	for _, n := range hist.bins {
		sum += int(n)
	}
	if hist.size > 8 || st.BinBytes <= 4 || st.BinBytes&(st.BinBytes-1) != 0 || uint64(hist.size)*st.BinBytes != hist.high-hist.low || sum != 4 {
		t.Errorf("MaxBins 8: %d bins of %d bytes over %#x..%#x holding %d samples, want at most 8 bins of a power of two bytes holding 4", hist.size, st.BinBytes, hist.low, hist.high, sum)
	}

	// Process 20 alone maps only another build-id.
	if _, _, err := gmon(t, 20); !errors.Is(err, ErrGmonBuildID) {
		t.Errorf("pid 20 only: %v, want %v", err, ErrGmonBuildID)
	}
}

// TestGmonProcessesOfSharedCode: two processes running one library at
// different bases sample the same code, which loading makes one frame
// (the first process's): gmon.out counts both samples at the code's
// link-time address, and both processes.
func TestGmonProcessesOfSharedCode(t *testing.T) {
	f, path, a, _ := gmonTestLib(t)
	off, ok := f.FileOffset(a)
	if !ok {
		t.Fatalf("no file offset of %#x", a)
	}
	w, buf, must := gmonCapture(t)
	must(w.AddMetadata(1e9, capture.MetaFrequency, "250"))
	id := hex.EncodeToString(f.BuildID())
	for i, base := range []uint64{0x7f12_3456_0000, 0x7f65_4321_0000} {
		pid := int32(10 + i)
		h := capture.FrameHeader{PID: pid, Time: 1e9 + 1}
		must(w.WriteFrame(&capture.Map{FrameHeader: h, Start: base, End: base + 0x10_0000, Filename: "/opt/x/libgm.so", BuildID: id}))
		must(w.WriteFrame(&capture.Sample{FrameHeader: h, TID: pid, Addrs: []uint64{capture.ContextUser, base + off}}))
	}
	must(w.Close())
	p, err := analyze.LoadBytes(buf.Bytes(), analyze.LoadOptions{NoHostFiles: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Frames) != 1 {
		t.Fatalf("%d frames, want the processes' one code as one", len(p.Frames))
	}
	v, err := p.View(analyze.ViewOptions{AllKinds: true})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	st, err := Gmon(&out, v, GmonOptions{File: f, Path: path})
	if err != nil {
		t.Fatal(err)
	}
	if st.Samples != 2 || st.Processes != 2 {
		t.Errorf("stats %+v, want 2 samples of 2 processes", st)
	}
	hist := decodeGmon(t, out.Bytes(), 8, f.ByteOrder()).hists[0]
	if i := (a - hist.low) / 4; a < hist.low || i >= uint64(len(hist.bins)) || hist.bins[i] != 2 {
		t.Errorf("bin of gm_a %#x in %#x..%#x: want 2 samples", a, hist.low, hist.high)
	}
}

// gmonCapture returns a writer of a capture from 1 to 2 s into buf, and a
// check that fails the test on an error.
func gmonCapture(t *testing.T) (w *capture.Writer, buf *bytes.Buffer, must func(error)) {
	t.Helper()
	buf = new(bytes.Buffer)
	w, err := capture.NewWriterWithOptions(buf, capture.WriterOptions{StartTime: 1e9, EndTime: 2e9, CaptureTime: time.Unix(0, 0), Clock: func() int64 { return 1e9 }})
	if err != nil {
		t.Fatal(err)
	}
	must = func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	return w, buf, must
}
