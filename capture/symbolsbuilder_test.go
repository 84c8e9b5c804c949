package capture

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
)

// TestSymbolsBuilderMatchesEncode: the builder writes the bytes
// EncodeSymbols writes for the same symbols, added process by process
// in any order within a process, names and tags repeating, the
// terminator left out.
func TestSymbolsBuilderMatchesEncode(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 50 {
		var syms []Symbol
		pid := int32(rng.IntN(3)) // pid 0 too: its terminator-like symbol is left out
		for range rng.IntN(20) {
			seen := map[uint64]bool{}
			for range rng.IntN(300) {
				begin := uint64(rng.IntN(1 << 20))
				if pid == 0 && rng.IntN(20) == 0 {
					begin = 0
				}
				if seen[begin] {
					continue
				}
				seen[begin] = true
				s := Symbol{PID: pid, Begin: begin, End: begin + uint64(rng.IntN(64)), Name: fmt.Sprint("f", rng.IntN(500)), Tag: []string{"", "libc", "Kernel", "app"}[rng.IntN(4)]}
				if begin == 0 && pid == 0 {
					s = Symbol{} // a terminator: left out by both
				}
				syms = append(syms, s)
			}
			pid += 1 + int32(rng.IntN(1000))
		}
		want, err := EncodeSymbols(syms)
		if err != nil {
			t.Fatal(err)
		}
		for _, keep := range []string{"memory", "file", "read-only file"} {
			got := buildSymbols(t, syms, keep)
			if !bytes.Equal(got, want) {
				t.Fatalf("round %d, %d symbols, records in %s: builder wrote %d bytes, EncodeSymbols %d, not the same", round, len(syms), keep, len(got), len(want))
			}
		}
		got := want
		if _, err := DecodeSymbols(got); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
	}
}

// TestSymbolsBuilderOutOfOrder: processes added out of order, one of
// them in two runs, give a file that decodes to the same symbols as
// EncodeSymbols' (pid -1 after others, as a pid of 2^32-1 read as an int
// came); a symbol ending before it begins is refused, and so is the file.
func TestSymbolsBuilderOutOfOrder(t *testing.T) {
	syms := []Symbol{
		{PID: 5, Begin: 30, End: 40, Name: "a"},
		{PID: 5, Begin: 10, End: 20, Name: "b", Tag: "libc"},
		{PID: 9, Begin: 10, End: 20, Name: "c"},
		{PID: -1, Begin: 0xffffffff81000000, End: 0xffffffff810000ff, Name: "k", Tag: "Kernel"},
		{PID: 5, Begin: 20, End: 25, Name: "d"},
		{PID: 7, Begin: 1, End: 2, Name: "a"},
	}
	got := buildSymbols(t, syms, "file")
	if mem := buildSymbols(t, syms, "memory"); !bytes.Equal(got, mem) {
		t.Errorf("records in a file: %d bytes, in memory %d, not the same", len(got), len(mem))
	}
	want, err := EncodeSymbols(syms)
	if err != nil {
		t.Fatal(err)
	}
	gt, err := DecodeSymbols(got)
	if err != nil {
		t.Fatal(err)
	}
	wt, err := DecodeSymbols(want)
	if err != nil {
		t.Fatal(err)
	}
	// Sysprof searches the records as they are: they must be in order.
	for i := symbolRecordSize; i+symbolRecordSize <= len(got); i += symbolRecordSize {
		pid, prev := int32(binary.NativeEndian.Uint32(got[i+16:])), int32(binary.NativeEndian.Uint32(got[i-symbolRecordSize+16:]))
		begin, prevBegin := binary.NativeEndian.Uint64(got[i:]), binary.NativeEndian.Uint64(got[i-symbolRecordSize:])
		if begin == 0 && pid == 0 {
			break // the terminator
		}
		if pid < prev || pid == prev && begin < prevBegin {
			t.Fatalf("record %d (pid %d at %#x) after pid %d at %#x", i/symbolRecordSize, pid, begin, prev, prevBegin)
		}
	}
	if g, w := fmt.Sprint(gt.Symbols()), fmt.Sprint(wt.Symbols()); g != w {
		t.Errorf("decoded\n%s\nwant\n%s", g, w)
	}
	var c SymbolsBuilder
	if err := c.Add(Symbol{PID: 1, Begin: 20, End: 10, Name: "a"}); err == nil {
		t.Error("end before begin: no error")
	}
	if _, err := c.Reader(); err == nil {
		t.Error("Reader after a refused symbol: no error")
	}
}

// buildSymbols runs a SymbolsBuilder over syms with its records in
// memory, in a file, or in a file it cannot write (back to memory).
func buildSymbols(t *testing.T, syms []Symbol, keep string) []byte {
	t.Helper()
	var b SymbolsBuilder
	switch keep {
	case "file":
		f, err := os.CreateTemp(t.TempDir(), "recs")
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		b.KeepIn(f)
	case "read-only file":
		name := filepath.Join(t.TempDir(), "recs")
		if err := os.WriteFile(name, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		f, err := os.Open(name)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		b.KeepIn(f)
	}
	for _, s := range syms {
		if err := b.Add(s); err != nil {
			t.Fatal(err)
		}
	}
	r, err := b.Reader()
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return got
}
