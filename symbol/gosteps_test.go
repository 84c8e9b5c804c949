package symbol

import (
	"slices"
	"testing"
)

// TestGoFramesInARow: the frames of a Go binary's addresses asked in
// address order, where each function's tables are decoded once for its
// addresses (goSteps), are those each address gets asked alone, its
// tables decoded up to it; and the tables of a function asked at two
// addresses are decoded once.
func TestGoFramesInARow(t *testing.T) {
	path := buildGo(t, "goinline", "exe", "")
	l := &Loader{}
	inRow, err := l.Load(openFile(t, path), path)
	if err != nil {
		t.Fatal(err)
	}
	alone, err := l.Load(openFile(t, path), path)
	if err != nil {
		t.Fatal(err)
	}
	if inRow.golines == nil {
		t.Fatal("no Go line table")
	}
	var funcs []Symbol
	for _, sym := range inRow.Table().All() {
		if sym.Size > 0 && inRow.InGoLineTable(sym.Addr) {
			funcs = append(funcs, sym)
		}
	}
	if len(funcs) < 100 {
		t.Fatalf("%d Go functions", len(funcs))
	}
	bad, decoded, inlined := 0, 0, 0
	for k, sym := range funcs {
		other := funcs[(k+1)%len(funcs)].Addr
		for pc := sym.Addr; pc < sym.Addr+sym.Size; pc++ {
			got := inRow.Frames(pc)
			alone.Frames(other) // another function in between: pc is asked alone
			want := alone.Frames(pc)
			if !slices.Equal(got, want) {
				if bad++; bad <= 5 {
					t.Errorf("%s+%#x: in a row %v, alone %v", sym.Name, pc-sym.Addr, got, want)
				}
			}
			if len(want) > 1 {
				inlined++
			}
		}
		if sym.Size > 1 {
			// Decoded once for the addresses after the first: the
			// line and file tables at least.
			if s := &inRow.golines.steps; s.entry != sym.Addr || len(s.tabs) < 2 {
				if decoded++; decoded <= 5 {
					t.Errorf("%s: %d tables decoded for its %d addresses, want its line and file tables", sym.Name, len(s.tabs), sym.Size)
				}
			}
		}
	}
	if bad > 0 || decoded > 0 {
		t.Errorf("%d addresses differ, %d functions not decoded once", bad, decoded)
	}
	if inlined == 0 {
		t.Error("no address in an inlined call: the inline tables are not covered")
	}
}
