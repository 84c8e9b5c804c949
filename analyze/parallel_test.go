package analyze

import (
	"fmt"
	"testing"

	"nsprof/internal/testcaptures"
)

// Frames are named side by side when no symbolizer reads ahead: each gets
// the name its own address has, whichever goroutine named it, and the
// counts per symbolizer add up (run with -race in CI).
func TestSymbolizeFramesInParallel(t *testing.T) {
	const pids, addrs = 3, 6000                                                                                // 18,000 frames: several blocks
	data := testcaptures.SameProgram(t, pids, addrs, "", false, func(_ int32, i int) bool { return i%2 == 0 }) // every other address is named
	p, err := LoadBytes(data, LoadOptions{NoHostFiles: true})
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
