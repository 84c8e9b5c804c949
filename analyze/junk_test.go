package analyze

import (
	"bytes"
	"testing"

	"nsprof/capture"
)

// TestTrimJunkOnlyForeign: a stack's outermost frame in no mapping of its
// process is dropped from another recorder's capture, and kept in one
// nsprof recorded (its process file says so): nsprof trims its own
// stacks with the code at hand, and anonymous executable memory it saw
// has no MAP frame.
func TestTrimJunkOnlyForeign(t *testing.T) {
	for _, nsprof := range []bool{false, true} {
		var buf bytes.Buffer
		w, err := capture.NewWriter(&buf)
		if err != nil {
			t.Fatal(err)
		}
		h := capture.FrameHeader{CPU: -1, PID: 50, Time: capture.Now()}
		must := func(err error) {
			t.Helper()
			if err != nil {
				t.Fatal(err)
			}
		}
		must(w.WriteFrame(&capture.Process{FrameHeader: h, Cmdline: "/usr/bin/app"}))
		must(w.WriteFrame(&capture.Map{FrameHeader: h, Start: 0x400000, End: 0x500000, Filename: "/usr/bin/app"}))
		if nsprof {
			must(w.AddProcessInfo(capture.ProcessInfo{PID: 50, Comm: "app"}))
		}
		const outer = 0x7e0000001234 // in no mapping
		must(w.AddSample(h.Time+1, 0, 50, 50, []uint64{capture.ContextUser, 0x401000, 0x402010, outer}))
		must(w.Close())
		p, err := Load(bytes.NewReader(buf.Bytes()), LoadOptions{NoHostFiles: true})
		if err != nil {
			t.Fatal(err)
		}
		st := p.Stack(p.Samples[0].Stack)
		kept := p.Frames[st[len(st)-1]].Addr == outer
		if kept != nsprof {
			t.Errorf("nsprof capture %t: the outermost unmapped frame kept %t (stack of %d frames)", nsprof, kept, len(st))
		}
	}
}
