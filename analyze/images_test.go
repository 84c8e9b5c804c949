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
	var buf bytes.Buffer
	w, err := capture.NewWriter(&buf)
	if err != nil {
		t.Fatal(err)
	}
	const base, pid = 0x400000, 7
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
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	p, err := LoadBytes(buf.Bytes(), LoadOptions{NoHostFiles: true})
	if err != nil {
		t.Fatal(err)
	}
	want := map[int64][2]string{5: {"a_f", "a"}, 10: {"b_f", "b"}, 15: {"b_f", "b"}, 25: {"c_f", "c"}}
	if len(p.Samples) != len(times) {
		t.Fatalf("%d samples, want %d", len(p.Samples), len(times))
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
	if len(p.Processes) != 1 || p.Processes[0].PID != pid || p.Processes[0].Samples != len(times) {
		t.Errorf("processes %+v, want pid %d alone with its %d samples", p.Processes, pid, len(times))
	}
}

// TestSplitImagesNotJIT: anonymous memory mapped again over itself (JIT
// code regions) does not split a process's frames: the bundle, keyed by
// process and address, names them whenever they were sampled.
func TestSplitImagesNotJIT(t *testing.T) {
	var buf bytes.Buffer
	w, err := capture.NewWriter(&buf)
	if err != nil {
		t.Fatal(err)
	}
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
	if err != nil {
		t.Fatal(err)
	}
	if err := w.AddFileGzip(capture.FrameHeader{PID: -1, Time: 30}, capture.SymbolsFile, bundle); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	p, err := LoadBytes(buf.Bytes(), LoadOptions{NoHostFiles: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range p.Samples {
		if f := p.Frames[p.Stack(s.Stack)[0]]; f.Loc.Function != "jit_f" {
			t.Errorf("sample at %d named %q, want jit_f", s.Time, f.Loc.Function)
		}
	}
}
