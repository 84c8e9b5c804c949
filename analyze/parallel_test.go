package analyze

import (
	"bytes"
	"fmt"
	"testing"

	"nsprof/capture"
)

// Frames are named side by side when no symbolizer reads ahead: each gets
// the name its own address has, whichever goroutine named it, and the
// counts per symbolizer add up (run with -race in CI).
func TestSymbolizeFramesInParallel(t *testing.T) {
	const pids, addrs = 3, 6000 // 18,000 frames: several blocks
	var buf bytes.Buffer
	w, err := capture.NewWriter(&buf)
	if err != nil {
		t.Fatal(err)
	}
	var syms []capture.Symbol
	for pid := int32(1); pid <= pids; pid++ {
		h := capture.FrameHeader{PID: pid, Time: 1, CPU: -1}
		w.WriteFrame(&capture.Process{FrameHeader: h, Cmdline: fmt.Sprintf("/bin/p%d", pid)})
		w.WriteFrame(&capture.Map{FrameHeader: h, Start: 0x400000, End: 0x400000 + addrs*0x10, Filename: "/bin/p"})
		for i := range addrs {
			a := 0x400000 + uint64(i)*0x10
			if i%2 == 0 { // every other address is named
				syms = append(syms, capture.Symbol{PID: pid, Begin: a, End: a + 0xf, Name: fmt.Sprintf("f_%d_%d", pid, i)})
			}
			w.WriteFrame(&capture.Sample{FrameHeader: capture.FrameHeader{PID: pid, Time: int64(2 + i), CPU: 0}, TID: pid, Addrs: []uint64{capture.ContextUser, a}})
		}
	}
	b, err := capture.EncodeSymbols(syms)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.AddSymbolsFile(capture.FrameHeader{PID: -1, CPU: -1, Time: 1 << 20}, b); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	p, err := LoadBytes(buf.Bytes(), LoadOptions{NoHostFiles: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Frames) != pids*addrs {
		t.Fatalf("%d frames, want %d", len(p.Frames), pids*addrs)
	}
	for _, f := range p.Frames {
		i := int((f.Addr - 0x400000) / 0x10)
		want := fmt.Sprintf("p+%#x", f.Addr-0x400000)
		if i%2 == 0 {
			want = fmt.Sprintf("f_%d_%d", f.PID, i)
		}
		if f.Loc.Function != want {
			t.Fatalf("frame pid %d %#x named %q, want %q", f.PID, f.Addr, f.Loc.Function, want)
		}
	}
	if got := p.SymbolStats["bundle"]; got != pids*addrs/2 {
		t.Errorf("bundle named %d frames, want %d (stats %v)", got, pids*addrs/2, p.SymbolStats)
	}
	if got := p.SymbolStats["unresolved"]; got != pids*addrs/2 {
		t.Errorf("%d frames unresolved, want %d", got, pids*addrs/2)
	}
}
