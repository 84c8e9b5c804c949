package analyze

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"nsprof/capture"
)

// TestLinesByFile: a lines record about a file (by build-id and offset)
// describes its code in every process that maps the file, wherever it is
// mapped, and in no process mapping another file at the same place.
func TestLinesByFile(t *testing.T) {
	var buf bytes.Buffer
	w, err := capture.NewWriterWithOptions(&buf, capture.WriterOptions{StartTime: testStart, EndTime: testStart + 10e6})
	if err != nil {
		t.Fatal(err)
	}
	type proc struct {
		pid        int32
		start, off uint64
		id         string
		again      bool // mapped again without the build-id
		want       string
	}
	procs := []proc{
		{pid: 100, start: 0x1000, id: "abcd", want: "leaf a.c:3 <- middle a.c:8 <- outer a.c:12"},
		{pid: 200, start: 0x7000, off: 0x1000, id: "abcd", want: "leaf a.c:3 <- middle a.c:8 <- outer a.c:12"},
		{pid: 300, start: 0x1000, id: "abcd", again: true, want: "leaf a.c:3 <- middle a.c:8 <- outer a.c:12"},
		{pid: 400, start: 0x1000, id: "beef", want: "outer :0"},
	}
	var syms []capture.Symbol
	for _, p := range procs {
		h := capture.FrameHeader{PID: p.pid, Time: testStart}
		frames := []capture.Frame{&capture.Process{FrameHeader: h, Cmdline: "/usr/bin/app"}}
		addr := p.start + 0x1010 - p.off // the file's offset 0x1010
		frames = append(frames, &capture.Map{FrameHeader: h, Start: p.start, End: p.start + 0x4000, Offset: p.off, Filename: "/usr/lib/libx.so", Inode: 7, BuildID: p.id})
		if p.again {
			// The one a lookup finds: the later of two at one start.
			frames = append(frames, &capture.Map{FrameHeader: h, Start: p.start, End: p.start + 0x4000, Offset: p.off, Filename: "/usr/lib/libx.so", Inode: 7})
		}
		frames = append(frames, &capture.Sample{FrameHeader: h, TID: p.pid, Addrs: []uint64{capture.ContextUser, addr}})
		for _, f := range frames {
			if err := w.WriteFrame(f); err != nil {
				t.Fatal(err)
			}
		}
		syms = append(syms, capture.Symbol{PID: p.pid, Begin: addr - 0x10, End: addr + 0xff, Name: "outer"})
	}
	h := capture.FrameHeader{PID: -1, Time: testStart}
	bundle, err := capture.EncodeSymbols(syms)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.AddFileGzip(h, capture.SymbolsFile, bundle); err != nil {
		t.Fatal(err)
	}
	lines := capture.EncodeLines([]capture.AddrLines{{Object: "abcd", Addr: 0x1010, Frames: []capture.SourceFrame{
		{Function: "leaf", File: "a.c", Line: 3}, {Function: "middle", File: "a.c", Line: 8}, {Function: "outer", File: "a.c", Line: 12}}}})
	if err := w.AddFileGzip(h, capture.LinesFile, lines); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	p, err := LoadBytes(buf.Bytes(), LoadOptions{NoHostFiles: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Warnings) > 0 {
		t.Errorf("warnings: %q", p.Warnings)
	}
	for _, want := range procs {
		var got string
		for _, s := range p.Samples {
			if s.PID != want.pid {
				continue
			}
			for _, fr := range p.Stack(s.Stack) {
				f := &p.Frames[fr]
				for _, in := range f.Loc.Inline {
					got += fmt.Sprintf("%s %s:%d <- ", in.Function, in.File, in.Line)
				}
				got += fmt.Sprintf("%s %s:%d", f.Loc.Function, f.Loc.File, f.Loc.Line)
			}
		}
		if got != want.want {
			t.Errorf("process %d (build-id %s): %q, want %q", want.pid, want.id, got, want.want)
		}
	}
	// The frames have room after them for the inlined calls' (see
	// TestInlineViewSharesFrames), although the lines did not say how
	// many processes' frames would have some.
	v, err := p.View(ViewOptions{Inline: true})
	if err != nil {
		t.Fatal(err)
	}
	calls := 0
	for _, f := range p.Frames {
		calls += len(f.Loc.Inline)
	}
	if calls == 0 || len(v.Frames) != len(p.Frames)+calls || &v.Frames[0] != &p.Frames[0] {
		t.Errorf("inline view: %d frames (want %d+%d), copied: %v", len(v.Frames), len(p.Frames), calls, &v.Frames[0] != &p.Frames[0])
	}
	if &v.Samples[0] != &p.Samples[0] {
		t.Error("the inline view copied the samples")
	}
}

// TestLinesDamageWarned: a lines file damaged after its first record
// names the frames that record describes and says so once, whether the
// bundle is decoded beside the frames' reading (LoadBytes: the lines
// waited for apart from the symbols) or after it (Load).
func TestLinesDamageWarned(t *testing.T) {
	var buf bytes.Buffer
	w, err := capture.NewWriterWithOptions(&buf, capture.WriterOptions{StartTime: testStart, EndTime: testStart + 10e6})
	if err != nil {
		t.Fatal(err)
	}
	h := capture.FrameHeader{PID: 100, Time: testStart}
	for _, f := range []capture.Frame{
		&capture.Process{FrameHeader: h, Cmdline: "/usr/bin/app"},
		&capture.Map{FrameHeader: h, Start: 0x1000, End: 0x5000, Filename: "/usr/lib/libx.so", Inode: 7, BuildID: "abcd"},
		&capture.Sample{FrameHeader: h, TID: 100, Addrs: []uint64{capture.ContextUser, 0x2010}},
	} {
		if err := w.WriteFrame(f); err != nil {
			t.Fatal(err)
		}
	}
	g := capture.FrameHeader{PID: -1, Time: testStart}
	bundle, err := capture.EncodeSymbols([]capture.Symbol{{PID: 100, Begin: 0x2000, End: 0x2100, Name: "outer"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.AddFileGzip(g, capture.SymbolsFile, bundle); err != nil {
		t.Fatal(err)
	}
	lines := capture.EncodeLines([]capture.AddrLines{{Object: "abcd", Addr: 0x1010, Frames: []capture.SourceFrame{
		{Function: "leaf", File: "a.c", Line: 3}, {Function: "outer", File: "a.c", Line: 12}}}})
	lines = append(lines, "@abcd\tzz\tf\tfile.c\t3\n"...)
	if err := w.AddFileGzip(g, capture.LinesFile, lines); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		load func() (*Profile, error)
	}{
		{"LoadBytes", func() (*Profile, error) { return LoadBytes(buf.Bytes(), LoadOptions{NoHostFiles: true}) }},
		{"Load", func() (*Profile, error) { return Load(bytes.NewReader(buf.Bytes()), LoadOptions{NoHostFiles: true}) }},
	} {
		p, err := c.load()
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		var lineWarnings []string
		for _, warning := range p.Warnings {
			if strings.Contains(warning, capture.LinesFile) {
				lineWarnings = append(lineWarnings, warning)
			}
		}
		if len(lineWarnings) != 1 || !strings.Contains(lineWarnings[0], "using the 1 addresses before the damage") {
			t.Errorf("%s: warnings %q, want one about %s keeping 1 address", c.name, p.Warnings, capture.LinesFile)
		}
		var got string
		for _, s := range p.Samples {
			for _, fr := range p.Stack(s.Stack) {
				f := &p.Frames[fr]
				for _, in := range f.Loc.Inline {
					got += in.Function + " <- "
				}
				got += f.Loc.Function
			}
		}
		if got != "leaf <- outer" {
			t.Errorf("%s: frames %q, want the damaged file's first record's", c.name, got)
		}
	}
}
