package analyze

import (
	"bytes"
	"compress/gzip"
	"testing"

	"nsprof/capture"
)

// TestSplitImages: a process that execed twice, each program's code at the
// same addresses, has each sample named in the image it was taken in: the
// last from the bundle (which names the process's addresses from its last
// image, as the recorder writes it), the earlier ones from the source
// lines described by their files' build-ids (a sample at the time of a
// mapping is the new image's); and the images stand for one process.
func TestSplitImages(t *testing.T) {
	const base, pid = 0x400000, 7
	p := loadWritten(t, func(w *capture.Writer) {
		writeSplitImages(t, w, base, pid)
	})
	want := map[int64][2]string{5: {"a_f", "a"}, 10: {"b_f", "b"}, 15: {"b_f", "b"}, 25: {"c_f", "c"}}
	if len(p.Samples) != len(want) {
		t.Fatalf("%d samples, want %d", len(p.Samples), len(want))
	}
	for _, s := range p.Samples {
		st := p.Stack(s.Stack)
		if len(st) != 2 {
			t.Fatalf("sample at %d: %d frames, want 2", s.Time, len(st))
		}
		k, u := p.Frames[st[0]], p.Frames[st[1]]
		if k.Loc.Function != "k_f" {
			t.Errorf("sample at %d: kernel frame named %q, want k_f", s.Time, k.Loc.Function)
		}
		if got := [2]string{u.Loc.Function, u.Loc.DSO}; got != want[s.Time] {
			t.Errorf("sample at %d named %q in %q, want %q", s.Time, got[0], got[1], want[s.Time])
		}
		if s.Time == 15 && (u.Loc.File != "b.c" || u.Loc.Line != 3) {
			t.Errorf("sample at 15 at %s:%d, want b.c:3", u.Loc.File, u.Loc.Line)
		}
		if s.PID != pid {
			t.Errorf("sample at %d of pid %d, want %d", s.Time, s.PID, pid)
		}
	}
	if len(p.Processes) != 1 || p.Processes[0].PID != pid || p.Processes[0].Samples != len(want) {
		t.Errorf("processes %+v, want pid %d alone with its %d samples", p.Processes, pid, len(want))
	}
}

// writeSplitImages writes TestSplitImages's process: pid runs /bin/a,
// /bin/b from time 10 and /bin/c from 20, all at base, and is sampled
// at 5, 10, 15 and 25 in kernel address 0xffffffff81000010 and at
// base+0x100; the bundle names the latter c_f, the lines a_f and b_f by
// a's and b's build-ids.
func writeSplitImages(t *testing.T, w *capture.Writer, base uint64, pid int32) {
	t.Helper()
	h := func(at int64) capture.FrameHeader { return capture.FrameHeader{PID: pid, Time: at, CPU: -1} }
	w.WriteFrame(&capture.Process{FrameHeader: h(1), Cmdline: "a"})
	for _, m := range []struct {
		at       int64
		file, id string
	}{{1, "/bin/a", "aa"}, {10, "/bin/b", "bb"}, {20, "/bin/c", "cc"}} {
		w.WriteFrame(&capture.Map{FrameHeader: h(m.at), Start: base, End: base + 0x1000, Filename: m.file, BuildID: m.id})
	}
	// The kernel frame is the same in every image.
	const kaddr = 0xffffffff81000010
	times := []int64{5, 10, 15, 25}
	for _, at := range times {
		w.WriteFrame(&capture.Sample{FrameHeader: capture.FrameHeader{PID: pid, Time: at, CPU: 0}, TID: pid,
			Addrs: []uint64{capture.ContextKernel, kaddr, capture.ContextUser, base + 0x100}})
	}
	bundle, err := capture.EncodeSymbols([]capture.Symbol{
		{PID: pid, Begin: base, End: base + 0x1ff, Name: "c_f"},
		{PID: pid, Begin: kaddr, End: kaddr + 0xf, Name: "k_f", Tag: "Kernel"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.AddFileGzip(capture.FrameHeader{PID: -1, Time: 30}, capture.SymbolsFile, bundle); err != nil {
		t.Fatal(err)
	}
	lines := []capture.AddrLines{
		{Object: "aa", Addr: 0x100, Frames: []capture.SourceFrame{{Function: "a_f"}}},
		{Object: "bb", Addr: 0x100, Frames: []capture.SourceFrame{{Function: "b_f", File: "b.c", Line: 3}}},
	}
	if err := w.AddLinesFile(capture.FrameHeader{PID: -1, Time: 30}, lines, gzip.BestSpeed); err != nil {
		t.Fatal(err)
	}
}

// loadWritten loads the capture write writes (the writer is closed after).
func loadWritten(t *testing.T, write func(w *capture.Writer)) *Profile {
	t.Helper()
	var buf bytes.Buffer
	w, err := capture.NewWriter(&buf)
	if err != nil {
		t.Fatal(err)
	}
	write(w)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	p, err := LoadBytes(buf.Bytes(), LoadOptions{NoHostFiles: true})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestSplitImagesNotJIT: anonymous memory mapped again over itself (JIT
// code regions) does not split a process's frames: the bundle, keyed by
// process and address, names them whenever they were sampled.
func TestSplitImagesNotJIT(t *testing.T) {
	p := loadWritten(t, func(w *capture.Writer) { writeJITRemap(t, w) })
	for _, s := range p.Samples {
		if f := p.Frames[p.Stack(s.Stack)[0]]; f.Loc.Function != "jit_f" {
			t.Errorf("sample at %d named %q, want jit_f", s.Time, f.Loc.Function)
		}
	}
}

// writeJITRemap writes a process whose anonymous memory is mapped again
// in part at time 10, sampled at 5 and 15 in the part, which the bundle
// names jit_f.
func writeJITRemap(t *testing.T, w *capture.Writer) {
	t.Helper()
	const base, pid = 0x7f0000000000, 9
	h := func(at int64) capture.FrameHeader { return capture.FrameHeader{PID: pid, Time: at, CPU: -1} }
	w.WriteFrame(&capture.Process{FrameHeader: h(1), Cmdline: "node"})
	w.WriteFrame(&capture.Map{FrameHeader: h(1), Start: base, End: base + 0x4000, Filename: "//anon"})
	w.WriteFrame(&capture.Map{FrameHeader: h(10), Start: base + 0x1000, End: base + 0x2000, Filename: "//anon"})
	for _, at := range []int64{5, 15} {
		w.WriteFrame(&capture.Sample{FrameHeader: capture.FrameHeader{PID: pid, Time: at, CPU: 0}, TID: pid,
			Addrs: []uint64{capture.ContextUser, base + 0x1100}})
	}
	bundle, err := capture.EncodeSymbols([]capture.Symbol{{PID: pid, Begin: base + 0x1100, End: base + 0x11ff, Name: "jit_f", Tag: "JIT"}})
	if err == nil {
		err = w.AddFileGzip(capture.FrameHeader{PID: -1, Time: 30}, capture.SymbolsFile, bundle)
	}
	if err != nil {
		t.Fatal(err)
	}
}
