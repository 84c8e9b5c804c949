package analyze

import (
	"bytes"
	"fmt"
	"runtime"
	"testing"
	"time"

	"nsprof/capture"
)

// inlineCapture writes a capture of one process whose two sampled
// addresses have functions inlined at them, in the bundled lines.
func inlineCapture(t *testing.T) []byte {
	t.Helper()
	return inlineCaptureLines(t, []capture.AddrLines{
		{PID: 100, Addr: 0x1010, Frames: []capture.SourceFrame{{Function: "leaf", File: "a.c", Line: 3}, {Function: "middle", File: "a.c", Line: 8}, {Function: "outer", File: "a.c", Line: 12}}},
		{PID: 100, Addr: 0x1020, Frames: []capture.SourceFrame{{Function: "outer", File: "a.c", Line: 13}}},
	})
}

// inlineCaptureLines writes the capture of inlineCapture with recs as
// its bundled lines.
func inlineCaptureLines(t *testing.T, recs []capture.AddrLines) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := capture.NewWriterWithOptions(&buf, capture.WriterOptions{
		StartTime: testStart, EndTime: testStart + 10e6,
		CaptureTime: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
	})
	if err != nil {
		t.Fatal(err)
	}
	h := capture.FrameHeader{PID: 100, Time: testStart}
	for _, f := range []capture.Frame{
		&capture.Process{FrameHeader: h, Cmdline: "/usr/bin/app"},
		&capture.Map{FrameHeader: h, Start: 0x1000, End: 0x5000, Filename: "/usr/bin/app", Inode: 7},
		&capture.Sample{FrameHeader: h, TID: 100, Addrs: []uint64{capture.ContextUser, 0x1010, 0x1210}},
		&capture.Sample{FrameHeader: h, TID: 100, Addrs: []uint64{capture.ContextUser, 0x1020, 0x1210}},
	} {
		if err := w.WriteFrame(f); err != nil {
			t.Fatal(err)
		}
	}
	bundle, err := capture.EncodeSymbols([]capture.Symbol{
		{PID: 100, Begin: 0x1000, End: 0x10ff, Name: "outer"},
		{PID: 100, Begin: 0x1200, End: 0x12ff, Name: "main"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.AddFileGzip(h, capture.SymbolsFile, bundle); err != nil {
		t.Fatal(err)
	}
	lines := capture.EncodeLines(recs)
	if err := w.AddFileGzip(h, capture.LinesFile, lines); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestInlineViewSharesFrames: the view showing inlined calls as frames
// adds theirs after the profile's frames, in the room left for them,
// instead of copying the profile's frames (on a capture of a thousand
// processes, a hundred megabytes); the profile's frames are unchanged,
// and a view made after the frames are named again shows the new names.
func TestInlineViewSharesFrames(t *testing.T) {
	p, err := LoadBytes(inlineCapture(t), LoadOptions{NoHostFiles: true})
	if err != nil {
		t.Fatal(err)
	}
	n := len(p.Frames)
	v, err := p.View(ViewOptions{Inline: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(v.Frames) != n+2 {
		t.Fatalf("view has %d frames, want the profile's %d and 2 inlined calls", len(v.Frames), n)
	}
	if &v.Frames[0] != &p.Frames[0] {
		t.Errorf("the inline view copied the profile's %d frames", n)
	}
	if len(p.Frames) != n || cap(p.Frames) != n {
		t.Errorf("profile frames: len %d cap %d, want %d and %d", len(p.Frames), cap(p.Frames), n, n)
	}
	got := samplePaths(v)
	want := []string{"main;outer;middle;leaf", "main;outer"}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("inline view stacks %q, want %q", got, want)
	}
	if v2, err := p.View(ViewOptions{Inline: true}); err != nil || &v2.Frames[n] != &v.Frames[n] {
		t.Errorf("a second inline view made its inlined frames again (err %v)", err)
	}
	// Named again: the new view has the new names, the profile's frames
	// as many as before.
	p.Symbolize(nil)
	v3, err := p.View(ViewOptions{Inline: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(v3.Frames) != n {
		t.Errorf("after naming without lines the view has %d frames, want %d", len(v3.Frames), n)
	}
}

// samplePaths returns the functions of each sample of v, root first,
// joined by semicolons.
func samplePaths(v *View) []string {
	var out []string
	for _, s := range v.Samples {
		var path []string
		for _, fn := range v.Path(s.Stack, nil) {
			path = append(path, v.Funcs[fn].Name)
		}
		out = append(out, joinPath(path))
	}
	return out
}

func joinPath(path []string) string {
	var b bytes.Buffer
	for i, s := range path {
		if i > 0 {
			b.WriteByte(';')
		}
		b.WriteString(s)
	}
	return b.String()
}

// TestInlineUnnamed: an inlined call the lines give no function name is
// charged to the function it was inlined in (the next named frame out,
// else the symbol), never to a made-up name, and counted.
func TestInlineUnnamed(t *testing.T) {
	p, err := LoadBytes(inlineCaptureLines(t, []capture.AddrLines{
		{PID: 100, Addr: 0x1010, Frames: []capture.SourceFrame{{File: "a.c", Line: 3}, {Function: "middle", File: "a.c", Line: 8}, {Function: "outer", File: "a.c", Line: 12}}},
		{PID: 100, Addr: 0x1020, Frames: []capture.SourceFrame{{File: "b.h", Line: 1}, {File: "a.c", Line: 13}}},
	}), LoadOptions{NoHostFiles: true})
	if err != nil {
		t.Fatal(err)
	}
	want := map[uint64][]string{0x1010: {"middle", "middle"}, 0x1020: {"outer"}}
	for _, f := range p.Frames {
		w, ok := want[f.Addr]
		if !ok {
			continue
		}
		var got []string
		for _, in := range f.Loc.Inline {
			got = append(got, in.Function)
		}
		if fmt.Sprint(got) != fmt.Sprint(w) {
			t.Errorf("%#x: inlined %q, want %q", f.Addr, got, w)
		}
		delete(want, f.Addr)
	}
	if len(want) > 0 {
		t.Errorf("no frames at %v", want)
	}
	if n := p.SymbolStats[UnnamedInline]; n != 2 {
		t.Errorf("SymbolStats[%q] = %d, want 2 (stats %v)", UnnamedInline, n, p.SymbolStats)
	}
}

// TestInlineViewTopLazy: an inline view's Top, computed from the
// profile's stacks and the inlined calls without expanding the stacks,
// is the Top of the expanded stacks; the stacks asked for afterwards are
// the expanded ones.
func TestInlineViewTopLazy(t *testing.T) {
	v := inlineView(t)
	lazy := v.Top(v.Samples)
	if v.lazy == nil || v.lazy.built.Load() {
		t.Fatal("Top expanded the stacks")
	}
	paths := samplePaths(v)
	if want := []string{"main;outer;middle;leaf", "main;outer"}; fmt.Sprint(paths) != fmt.Sprint(want) {
		t.Errorf("expanded stacks %q, want %q", paths, want)
	}
	expanded := v.Top(v.Samples)
	if fmt.Sprint(lazy) != fmt.Sprint(expanded) {
		t.Errorf("Top without expanding:\n%+v\nexpanded:\n%+v", lazy, expanded)
	}
	var leaf FuncStat
	for _, s := range lazy {
		if s.Name == "leaf" {
			leaf = s
		}
	}
	if leaf.Self != 1 || leaf.Total != 1 {
		t.Errorf("leaf %+v, want self 1 and total 1", leaf)
	}
}

// TestInlineViewTopSplit checks that Top gives the same functions when
// the stacks are counted by several goroutines as by one.
func TestInlineViewTopSplit(t *testing.T) {
	v := inlineView(t)
	whole := v.Top(v.Samples)
	defer func(part, procs int) {
		funcTotalsPart = part
		runtime.GOMAXPROCS(procs)
	}(funcTotalsPart, runtime.GOMAXPROCS(2))
	funcTotalsPart = 1 // a goroutine for each of the two stacks
	split := v.Top(v.Samples)
	if v.lazy.built.Load() {
		t.Fatal("Top expanded the stacks")
	}
	if fmt.Sprint(split) != fmt.Sprint(whole) {
		t.Errorf("Top counted by two goroutines:\n%+v\nby one:\n%+v", split, whole)
	}
}

// inlineView returns the inline view of inlineCapture.
func inlineView(t *testing.T) *View {
	t.Helper()
	p, err := LoadBytes(inlineCapture(t), LoadOptions{NoHostFiles: true})
	if err != nil {
		t.Fatal(err)
	}
	v, err := p.View(ViewOptions{Inline: true})
	if err != nil {
		t.Fatal(err)
	}
	return v
}
