package symbol

import (
	"slices"
	"testing"

	"nsprof/internal/pageread"
)

// TestGoLinesReadOnDemand: a Go binary's line table is read from the file
// as its functions' frames are asked for, holding a bounded number of
// pages, and gives the frames the table held whole gives.
func TestGoLinesReadOnDemand(t *testing.T) {
	f := openFile(t, buildGo(t, "goinline", "exe", ""))
	gl, err := f.goLines()
	if err != nil || gl == nil {
		t.Fatalf("goLines() = %v, %v", gl, err)
	}
	if gl.pcln.src.IsHeld() {
		t.Fatal("the line table of a Go executable is held whole")
	}
	// The table again, with 8 pages at most.
	src := pageread.File(f.r, int64(f.elf.Section(".gopclntab").Offset), gl.pcln.src.Len(), 0, 8)
	gl.funcnames.src, gl.cutab.src, gl.filetab.src, gl.pctab.src, gl.pcln.src = src, src, src, src, src
	if gl.funcdata.src != nil && !gl.funcdata.src.IsHeld() && gl.funcdata.src.Len() == src.Len() {
		gl.funcdata.src = src
	}
	data, _, err := f.pclntab()
	if err != nil {
		t.Fatal(err)
	}
	held, err := parseGoLineTable(data, f.elf.ByteOrder)
	if err != nil || held == nil {
		t.Fatalf("parseGoLineTable = %v, %v", held, err)
	}
	held.text, held.funcdataAddr = gl.text, gl.funcdataAddr
	if gl.funcdata.src == src {
		held.funcdata = spanOf(pageread.Held(data), gl.funcdata.start)
	} else {
		held.funcdata = gl.funcdata
	}
	n, frames := 0, 0
	for i := range gl.nfunc {
		e, ok := gl.u32(gl.pcln, uint64(i)*8)
		if !ok {
			t.Fatalf("function %d: no entry", i)
		}
		for _, pc := range []uint64{gl.text + uint64(e), gl.text + uint64(e) + 5} {
			got, want := gl.frames(pc), held.frames(pc)
			if !slices.Equal(got, want) {
				t.Fatalf("%#x: frames %v read on demand, %v held", pc, got, want)
			}
			frames += len(got)
		}
		if src.Pages() > 8 {
			t.Fatalf("%d pages kept, bound 8", src.Pages())
		}
		n++
	}
	if n < 1000 || frames < n {
		t.Errorf("%d functions, %d frames compared", n, frames)
	}
}
