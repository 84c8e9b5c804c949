package analyze

import (
	"bytes"
	"testing"

	"nsprof/capture"
)

// unnamedCapture writes a capture of one process whose stripped program
// is sampled at three addresses no symbolizer names, and twice at two
// addresses in no mapping.
func unnamedCapture(t *testing.T) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := capture.NewWriterWithOptions(&buf, capture.WriterOptions{StartTime: testStart, EndTime: testStart + 10e6})
	if err != nil {
		t.Fatal(err)
	}
	h := capture.FrameHeader{PID: 300, Time: testStart}
	frames := []capture.Frame{
		&capture.Process{FrameHeader: h, Cmdline: "/opt/stripped"},
		&capture.Map{FrameHeader: h, Start: 0x40000, End: 0x50000, Offset: 0x1000, Filename: "/opt/stripped"},
	}
	for _, a := range []uint64{0x40100, 0x40200, 0x40300} {
		frames = append(frames, &capture.Sample{FrameHeader: h, TID: 300, Addrs: []uint64{capture.ContextUser, a}})
	}
	for _, a := range []uint64{0x7000, 0x8000} {
		frames = append(frames, &capture.Sample{FrameHeader: h, TID: 300, Addrs: []uint64{capture.ContextUser, a}})
	}
	for _, f := range frames {
		if err := w.WriteFrame(f); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestUnnamedByDSO checks that the addresses no symbolizer names make
// one function per DSO by default, and one per address with
// LoadOptions.Addresses, the frames keeping their address's name.
func TestUnnamedByDSO(t *testing.T) {
	for _, c := range []struct {
		addresses bool
		want      map[string]int // self samples by function
	}{
		{false, map[string]int{"[unknown in stripped]": 3, "[unknown]": 2}},
		{true, map[string]int{
			"stripped+0x1100": 1, "stripped+0x1200": 1, "stripped+0x1300": 1,
			"[unknown] 0x7000": 1, "[unknown] 0x8000": 1,
		}},
	} {
		p, err := LoadBytes(unnamedCapture(t), LoadOptions{NoHostFiles: true, Addresses: c.addresses})
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]int{}
		for _, s := range p.Top(p.Samples) {
			got[s.Name] = s.Self
			if s.Name == "[unknown in stripped]" && s.DSO != "stripped" {
				t.Errorf("%s in DSO %q, want stripped", s.Name, s.DSO)
			}
		}
		if len(got) != len(c.want) {
			t.Errorf("addresses %v: functions %v, want %v", c.addresses, got, c.want)
		}
		for n, v := range c.want {
			if got[n] != v {
				t.Errorf("addresses %v: %q self %d, want %d (functions %v)", c.addresses, n, got[n], v, got)
			}
		}
		for _, f := range p.Frames {
			if f.Loc.Function == "" || f.Loc.Function[0] != 's' && f.Loc.Function[:10] != "[unknown] " {
				t.Errorf("frame %#x named %q, want its address's name", f.Addr, f.Loc.Function)
			}
		}
		if p.SymbolStats["unresolved"] != 5 {
			t.Errorf("unresolved %d, want 5", p.SymbolStats["unresolved"])
		}
	}
}
