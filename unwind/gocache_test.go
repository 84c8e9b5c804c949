package unwind

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"nsprof/internal/testutils"
)

// TestGoTableEncoded: a Go binary's table decoded from its encoding
// gives the rows the table loaded from the file gives, at every
// function, maps addresses as it does, and encodes to the same bytes.
func TestGoTableEncoded(t *testing.T) {
	tab := loadFile(t, buildGo(t, "-s -w"))
	enc, ok := tab.AppendGo(nil)
	if !ok {
		t.Fatal("a Go binary's table not encoded")
	}
	got, err := DecodeGo(enc)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got.segs, tab.segs) {
		t.Errorf("segments %+v, want %+v", got.segs, tab.segs)
	}
	want, have := allRows(tab), allRows(got)
	if len(want) == 0 || !slices.Equal(have, want) {
		t.Fatalf("%d rows decoded, %d loaded, differing", len(have), len(want))
	}
	g := tab.gofuncs
	for i := range g.nfunc {
		for _, a := range []uint64{g.text + g.entry(i), g.text + g.end(i) - 1} {
			r1, ok1 := tab.lookup(a)
			r2, ok2 := got.lookup(a)
			if r1 != r2 || ok1 != ok2 {
				t.Fatalf("at %#x: decoded %+v %v, loaded %+v %v", a, r2, ok2, r1, ok1)
			}
		}
	}
	if got.Size() > tab.Size() {
		t.Errorf("decoded table holds %d bytes, loaded %d", got.Size(), tab.Size())
	}
	again, _ := got.AppendGo(nil)
	if !bytes.Equal(again, enc) {
		t.Error("the decoded table encodes to other bytes")
	}
	// Cut short anywhere, or with a byte more, it is refused.
	for _, n := range []int{0, 5, len(goTableMagic) + 3, len(enc) / 2, len(enc) - 1} {
		if _, err := DecodeGo(enc[:n]); err == nil {
			t.Errorf("decoded from its first %d of %d bytes", n, len(enc))
		}
	}
	if _, err := DecodeGo(append(slices.Clone(enc), 0)); err == nil {
		t.Error("decoded with a byte more")
	}
}

// TestGoTableWithRowsNotEncoded: a table with CFI rows (libc's) is not
// encoded: only a Go binary's pclntab alone is.
func TestGoTableWithRowsNotEncoded(t *testing.T) {
	if _, err := os.Stat(libcPath); err != nil {
		t.Skip("no libc at", libcPath)
	}
	if _, ok := loadFile(t, libcPath).AppendGo(nil); ok {
		t.Error("libc's table encoded as a Go binary's")
	}
}

// FuzzDecodeGo decodes hostile encodings: never a panic, and a table
// decoded is looked up at its function entries without one, and encodes
// back to the same bytes.
func FuzzDecodeGo(f *testing.F) {
	f.Add([]byte(goTableMagic))
	seed := append([]byte(goTableMagic), 0, 0, 0, 0)
	seed = append(seed, 0, 0x10, 0, 0, 0, 0, 0, 0, 1, 2, 0, 0, 0)
	seed = append(seed, 0, 0, 0, 0, 0x10, 0, 0, 0, 0x20, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 4, 0, 0, 0, 2, 4, 0x20, 0)
	f.Add(seed)
	f.Fuzz(func(t *testing.T, data []byte) {
		tab, err := DecodeGo(data)
		if err != nil {
			return
		}
		g := tab.gofuncs
		for i := range min(g.nfunc, 1000) {
			g.decode(i)
			tab.lookup(g.text + g.entry(i))
		}
		Unwind(nil, Regs{IP: g.text, SP: 0x8000, BP: 0x8010}, data, oneModule{tab}, 64)
		if again, ok := tab.AppendGo(nil); !ok || !bytes.Equal(again, data) {
			t.Fatalf("decoded table encodes to other bytes (%v)", ok)
		}
	})
}

// BenchmarkGoTable compares loading the Go compiler's table from its
// pclntab with decoding it from its encoding.
func BenchmarkGoTable(b *testing.B) {
	out, err := exec.Command(testutils.LookPathOrSkip(b, "go"), "env", "GOTOOLDIR").Output()
	if err != nil {
		b.Skip("go env GOTOOLDIR:", err)
	}
	f, err := os.Open(filepath.Join(strings.TrimSpace(string(out)), "compile"))
	if err != nil {
		b.Skip(err)
	}
	defer f.Close()
	tab, err := Load(f, nil)
	if err != nil {
		b.Fatal(err)
	}
	enc, ok := tab.AppendGo(nil)
	if !ok {
		b.Fatal("the compiler's table not encoded")
	}
	b.Run("load", func(b *testing.B) {
		for b.Loop() {
			Load(f, nil)
		}
	})
	b.Run("decode", func(b *testing.B) {
		b.SetBytes(int64(len(enc)))
		for b.Loop() {
			if _, err := DecodeGo(enc); err != nil {
				b.Fatal(err)
			}
		}
	})
}
