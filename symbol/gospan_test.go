package symbol

import (
	"bytes"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestGoSourceAt: bytes read in pages give what the bytes held whole give,
// across page boundaries, at the end and past it.
func TestGoSourceAt(t *testing.T) {
	data := make([]byte, 3*goPageSize+123)
	for i := range data {
		data[i] = byte(i*7 + i/251)
	}
	const base = 100 // the source starts inside the reader
	r := bytes.NewReader(append(make([]byte, base), data...))
	lazy, held := fileSource(r, base, uint64(len(data))), heldSource(data)
	rng := rand.New(rand.NewPCG(1, 2))
	check := func(off, n uint64) {
		got, want := lazy.at(off, n), held.at(off, n)
		if !bytes.Equal(got, want) {
			t.Fatalf("at(%d, %d): %d bytes read in pages, %d held, differing", off, n, len(got), len(want))
		}
	}
	for _, off := range []uint64{0, goPageSize - 1, goPageSize, 2*goPageSize - 3, uint64(len(data)) - 1, uint64(len(data)), uint64(len(data)) + 5} {
		for _, n := range []uint64{1, 4, 256, goPageSize + 10, 1 << 20} {
			check(off, n)
		}
	}
	for range 1000 {
		check(rng.Uint64N(uint64(len(data))+10), rng.Uint64N(3*goPageSize))
	}
	if len(lazy.pages) != 4 {
		t.Errorf("%d pages kept, want 4", len(lazy.pages))
	}
	if got := cstring(lazy.span(goPageSize-2), 0); got != string(data[goPageSize-2:goPageSize-2+bytes.IndexByte(data[goPageSize-2:], 0)]) {
		t.Errorf("cstring across a page boundary = %q", got)
	}
}

// TestGoLinesReadOnDemand: a Go binary's line table is read from the file
// as its functions' frames are asked for, holding a bounded number of
// pages, and gives the frames the table held whole gives.
func TestGoLinesReadOnDemand(t *testing.T) {
	f := openFile(t, buildGo(t, "goinline", "exe", ""))
	gl, err := f.goLines()
	if err != nil || gl == nil {
		t.Fatalf("goLines() = %v, %v", gl, err)
	}
	src := gl.pcln.src
	if src.whole != nil {
		t.Fatal("the line table of a Go executable is held whole")
	}
	src.maxPages = 8
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
		held.funcdata = heldSource(data).span(gl.funcdata.start)
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
		if len(src.pages) > src.maxPages {
			t.Fatalf("%d pages kept, bound %d", len(src.pages), src.maxPages)
		}
		n++
	}
	if n < 1000 || frames < n {
		t.Errorf("%d functions, %d frames compared", n, frames)
	}
}
