package analyze

import (
	"bytes"
	"reflect"
	"slices"
	"testing"
)

// catchAll names every user address, as a host symbolizer might.
type catchAll struct{}

func (catchAll) Symbolize(pid int32, addr uint64, kernel bool) (Location, bool) {
	if kernel {
		return Location{}, false
	}
	return Location{Function: "any", DSO: "any", File: "any.c", Line: int(addr & 0xff)}, true
}

func (catchAll) String() string { return "any" }

// preparedAll is catchAll that must be told its addresses first.
type preparedAll struct {
	catchAll
	told     []query
	prepared int
	early    bool // asked before prepare
}

func (s *preparedAll) Symbolize(pid int32, addr uint64, kernel bool) (Location, bool) {
	if s.prepared == 0 {
		s.early = true
	}
	return s.catchAll.Symbolize(pid, addr, kernel)
}

func (s *preparedAll) prepare(qs []query) {
	s.prepared++
	s.told = append(s.told, qs...)
}

// TestSymbolizePrepared checks that a symbolizer that prepares is told
// every address it will be asked about, once, before it is asked, and
// that the frames get the names a chain of plain symbolizers gives.
func TestSymbolizePrepared(t *testing.T) {
	p, err := Load(bytes.NewReader(writeTestCapture(t)), LoadOptions{NoSymbolize: true})
	if err != nil {
		t.Fatal(err)
	}
	p.Symbolize(Chain{p.CaptureSymbolizer(), catchAll{}})
	want, wantStats := slices.Clone(p.Frames), p.SymbolStats
	wantFuncs := slices.Clone(p.Funcs)

	s := &preparedAll{}
	p.Symbolize(Chain{p.CaptureSymbolizer(), s})
	if !reflect.DeepEqual(p.Frames, want) || !reflect.DeepEqual(p.Funcs, wantFuncs) {
		t.Errorf("frames or functions differ from those of the same chain unprepared")
	}
	if got := p.SymbolStats; !reflect.DeepEqual(got, wantStats) {
		t.Errorf("stats %v, want %v", got, wantStats)
	}
	if wantStats["any"] == 0 {
		t.Fatalf("the test capture leaves no frame to the last symbolizer: stats %v", wantStats)
	}
	if s.prepared != 1 || s.early {
		t.Errorf("prepared %d times, asked before: %v", s.prepared, s.early)
	}
	for _, f := range p.Frames {
		if f.Loc.DSO != "any" {
			continue
		}
		a := f.Addr
		if f.Caller {
			a--
		}
		if !slices.Contains(s.told, query{f.PID, a, f.Kernel}) {
			t.Errorf("frame %d %#x named by the prepared symbolizer, not told", f.PID, f.Addr)
		}
	}
}
