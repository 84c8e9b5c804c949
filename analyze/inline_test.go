package analyze

import (
	"bytes"
	"fmt"
	"reflect"
	"runtime"
	"slices"
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

// TestInlineFramesParts: frames with inlined calls taken in parts side by
// side give the frames, chains and functions that one pass over the
// frames in order gives, with functions first inlined in a later part,
// inlined in several parts, and also a function of the profile's.
func TestInlineFramesParts(t *testing.T) {
	if runtime.GOMAXPROCS(0) < 2 {
		t.Skip("one part only")
	}
	p := &Profile{Funcs: []Function{{Name: "main", DSO: "app"}, {Name: "shared", DSO: "app"}}}
	const n = 20000 // frames; two thirds with calls: several parts
	locs := make([]*Location, 0, n)
	for i := range n {
		loc := &Location{Function: "main", DSO: "app"}
		if i%3 != 0 {
			for j := range 1 + i%4 {
				// Names repeat across parts; some first appear late.
				name := fmt.Sprintf("f%d", (i*7+j*13)%(500+i/40))
				if j == 2 {
					name = "shared"
				}
				loc.Inline = append(loc.Inline, Location{Function: name, DSO: "app", Line: j})
			}
		}
		if i%5 == 4 && len(locs) > 0 && len(locs[len(locs)-1].Inline) > 0 {
			loc = locs[len(locs)-1] // frames at the same code share theirs
		}
		locs = append(locs, loc)
		p.Frames = append(p.Frames, Frame{Addr: uint64(0x1000 + i), PID: int32(1 + i%3), Loc: loc, Kernel: i%11 == 0})
	}
	with := framesWithInline(p.Frames)
	got := newInlineFrames(p, nil, with)
	want := serialInlineFrames(p, with)
	if !reflect.DeepEqual(got.funcs, want.funcs) {
		t.Fatalf("%d functions, want %d (or differently numbered)", len(got.funcs), len(want.funcs))
	}
	if !slices.Equal(got.chains, want.chains) || !slices.Equal(got.at, want.at) {
		t.Fatalf("chains differ")
	}
	if len(got.frames) != len(want.frames) {
		t.Fatalf("%d frames, want %d", len(got.frames), len(want.frames))
	}
	for i := range want.frames {
		if got.frames[i] != want.frames[i] {
			t.Fatalf("frame %d: %+v, want %+v", i, got.frames[i], want.frames[i])
		}
	}
}

// serialInlineFrames is newInlineFrames done in one pass over the frames
// in order.
func serialInlineFrames(p *Profile, with []int32) *inlineFrames {
	x := &inlineFrames{frames: slices.Clone(p.Frames), funcs: slices.Clone(p.Funcs), at: make([]int32, len(p.Frames)+1)}
	funcs := make(map[Function]FuncID)
	for id, fn := range p.Funcs {
		funcs[fn] = FuncID(id)
	}
	last := 0
	for _, i := range with {
		i := int(i)
		f := &p.Frames[i]
		for j := last; j <= i; j++ {
			x.at[j] = int32(len(x.chains))
		}
		for k, in := range f.Loc.Inline {
			id := internFunc(funcs, &x.funcs, Function{Name: in.Function, DSO: in.DSO, Kernel: f.Kernel})
			x.chains = append(x.chains, FrameID(len(x.frames)))
			x.frames = append(x.frames, Frame{PID: f.PID, Addr: f.Addr, Kernel: f.Kernel, Loc: &f.Loc.Inline[k], Func: id})
		}
		x.chains = append(x.chains, FrameID(i))
		last = i + 1
	}
	for j := last; j <= len(p.Frames); j++ {
		x.at[j] = int32(len(x.chains))
	}
	return x
}
