package capture

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
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
		var b SymbolsBuilder
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
		if !bytes.Equal(got, want) {
			t.Fatalf("round %d, %d symbols: builder wrote %d bytes, EncodeSymbols %d, not the same", round, len(syms), len(got), len(want))
		}
		if _, err := DecodeSymbols(got); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
	}
}

// TestSymbolsBuilderRefuses: a process after a later one, and a symbol
// ending before it begins, are errors, kept for the rest.
func TestSymbolsBuilderRefuses(t *testing.T) {
	var b SymbolsBuilder
	if err := b.Add(Symbol{PID: 5, Begin: 10, End: 20, Name: "a"}); err != nil {
		t.Fatal(err)
	}
	if err := b.Add(Symbol{PID: 4, Begin: 10, End: 20, Name: "b"}); err == nil {
		t.Error("pid 4 after pid 5: no error")
	}
	if _, err := b.Reader(); err == nil {
		t.Error("Reader after a refused symbol: no error")
	}
	var c SymbolsBuilder
	if err := c.Add(Symbol{PID: 1, Begin: 20, End: 10, Name: "a"}); err == nil {
		t.Error("end before begin: no error")
	}
}
