package capture

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
)

func TestSymbolsRoundTrip(t *testing.T) {
	in := []Symbol{
		{PID: 20, Begin: 0x401000, End: 0x40101f, Name: "main", Tag: "demo"},
		{PID: 10, Begin: 0xffffffff81000000, End: 0xffffffff810000ff, Name: "do_syscall_64", Tag: "Kernel"},
		{PID: 20, Begin: 0x401020, End: 0x401020, Name: "main", Tag: ""},
		{PID: 20, Begin: 0x7f0000001000, End: 0x7f0000001fff, Name: "malloc", Tag: "libc"},
	}
	b, err := EncodeSymbols(in)
	if err != nil {
		t.Fatal(err)
	}
	tab, err := DecodeSymbols(b)
	if err != nil {
		t.Fatal(err)
	}
	if tab.Len() != 4 || tab.Symbols()[0].PID != 10 {
		t.Fatalf("decoded %+v", tab.Symbols())
	}
	for _, tc := range []struct {
		pid  int32
		addr uint64
		want string
	}{
		{20, 0x401000, "main"}, {20, 0x40101f, "main"}, {20, 0x401020, "main"},
		{20, 0x401021, ""}, {20, 0x7f0000001800, "malloc"}, {10, 0xffffffff81000010, "do_syscall_64"},
		{10, 0x401000, ""}, {30, 0x401000, ""}, {20, 0x400fff, ""},
	} {
		s, ok := tab.Lookup(tc.pid, tc.addr)
		if ok != (tc.want != "") || s.Name != tc.want {
			t.Errorf("Lookup(%d, %#x) = %q %t, want %q", tc.pid, tc.addr, s.Name, ok, tc.want)
		}
	}
	k, _ := tab.Lookup(10, 0xffffffff81000000)
	if !reflect.DeepEqual(k, in[1]) {
		t.Errorf("kernel symbol %+v", k)
	}
}

func TestSymbolsDamaged(t *testing.T) {
	b, _ := EncodeSymbols([]Symbol{{PID: 1, Begin: 1, End: 2, Name: "a"}, {PID: 1, Begin: 3, End: 4, Name: "b"}})
	// Cut inside the records: the string table is gone too.
	tab, err := DecodeSymbols(b[:40])
	var fe *FormatError
	if !errors.As(err, &fe) || tab.Len() != 0 {
		t.Fatalf("truncated: %v, %d records", err, tab.Len())
	}
	// Cut before the terminator, names intact in a copy.
	noEnd := append(append([]byte{}, b[:2*symbolRecordSize]...), b[3*symbolRecordSize:]...)
	if tab, err := DecodeSymbols(noEnd[:2*symbolRecordSize]); !errors.As(err, &fe) || tab.Len() != 0 {
		t.Fatalf("no terminator: %v, %d records", err, tab.Len())
	}
	b[20] = 0xff
	b[21] = 0xff
	if _, err := DecodeSymbols(b); !errors.As(err, &fe) {
		t.Fatalf("bad string offset: %v", err)
	}
	if _, err := EncodeSymbols([]Symbol{{Begin: 5, End: 4}}); err == nil {
		t.Fatal("end before begin accepted")
	}
}

func FuzzDecodeSymbols(f *testing.F) {
	b, _ := EncodeSymbols([]Symbol{{PID: 1, Begin: 1, End: 2, Name: "a", Tag: "t"}})
	f.Add(b)
	f.Fuzz(func(t *testing.T, b []byte) {
		tab, _ := DecodeSymbols(b)
		for _, s := range tab.Symbols() {
			tab.Lookup(s.PID, s.Begin)
		}
		// What was decoded encodes, and decodes back to the same
		// symbols (the encoder sorts them: compare sorted).
		enc, err := EncodeSymbols(tab.Symbols())
		if err != nil {
			if slices.ContainsFunc(tab.Symbols(), func(s Symbol) bool { return s.End < s.Begin }) {
				return // a file may hold what the encoder refuses
			}
			t.Fatalf("decoded symbols do not encode: %v", err)
		}
		again, err := DecodeSymbols(enc)
		if err != nil {
			t.Fatalf("re-encoded symbols do not decode: %v", err)
		}
		kept := slices.DeleteFunc(slices.Clone(tab.Symbols()), isTerminator)
		if got, want := sortedSymbols(again.Symbols()), sortedSymbols(kept); !reflect.DeepEqual(got, want) {
			t.Fatalf("round trip changed the symbols:\n got %+v\nwant %+v", got, want)
		}
	})
}

func sortedSymbols(s []Symbol) []Symbol {
	s = append([]Symbol{}, s...) // never nil: nil and empty compare equal
	slices.SortFunc(s, func(a, b Symbol) int {
		return cmp.Or(cmp.Compare(a.PID, b.PID), cmp.Compare(a.Begin, b.Begin), cmp.Compare(a.End, b.End),
			strings.Compare(a.Name, b.Name), strings.Compare(a.Tag, b.Tag))
	})
	return s
}

// TestSymbolsTerminator: the records end, as in Sysprof's bundled
// symbolizer, at the first whose begin, end, pid and name offset are 0,
// even with a tag; and EncodeSymbols leaves out a symbol that would encode
// as that record, instead of ending the records early.
func TestSymbolsTerminator(t *testing.T) {
	b, err := EncodeSymbols([]Symbol{{PID: 1, Begin: 1, End: 2, Name: "a", Tag: "t"}, {PID: 1, Begin: 3, End: 4, Name: "b"}})
	if err != nil {
		t.Fatal(err)
	}
	// Turn the second record into begin=end=pid=name=0 with a tag.
	r := b[symbolRecordSize : 2*symbolRecordSize]
	tag := binary.NativeEndian.Uint32(b[24:])
	clear(r)
	binary.NativeEndian.PutUint32(r[24:], tag)
	tab, err := DecodeSymbols(b)
	if err != nil || tab.Len() != 1 || tab.Symbols()[0].Name != "a" {
		t.Fatalf("decoded %+v, %v; want only a", tab.Symbols(), err)
	}
	b, err = EncodeSymbols([]Symbol{{}, {PID: 1, Begin: 1, End: 2, Name: "a"}, {Tag: "t"}})
	if err != nil {
		t.Fatal(err)
	}
	if tab, err := DecodeSymbols(b); err != nil || tab.Len() != 1 || tab.Symbols()[0].Name != "a" {
		t.Fatalf("decoded %+v, %v; want only a", tab.Symbols(), err)
	}
}

// TestSymbolsInPlace: EncodeSymbolsInPlace writes the bytes EncodeSymbols
// does, from unsorted symbols with one to leave out, and EncodeSymbols
// leaves its argument as it was.
func TestSymbolsInPlace(t *testing.T) {
	syms := []Symbol{{PID: 2, Begin: 9, End: 10, Name: "c"}, {}, {PID: 1, Begin: 3, End: 4, Name: "b", Tag: "t"}, {PID: 1, Begin: 1, End: 2, Name: "a"}}
	orig := slices.Clone(syms)
	want, err := EncodeSymbols(syms)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(syms, orig) {
		t.Errorf("EncodeSymbols changed its argument: %+v", syms)
	}
	got, err := EncodeSymbolsInPlace(syms)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("in place: %x\nwant %x", got, want)
	}
}

// A file whose records are not in (pid, begin) order, as another writer
// may leave them, is looked up as if they were: the last record of the
// process beginning at or below the address, when it ends at or after it.
func TestSymbolsUnsorted(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	var syms []Symbol
	for i := range 300 {
		begin := uint64(rng.IntN(1000)) * 16
		syms = append(syms, Symbol{PID: []int32{-1, 3, 5, 70000}[rng.IntN(4)], Begin: begin, End: begin + uint64(rng.IntN(40)), Name: fmt.Sprint("f", i), Tag: []string{"", "libc"}[rng.IntN(2)]})
	}
	b, err := EncodeSymbols(syms)
	if err != nil {
		t.Fatal(err)
	}
	// Shuffle the records; their string offsets stay valid.
	recs := b[:len(syms)*symbolRecordSize]
	perm := rng.Perm(len(syms))
	shuffled := make([]byte, len(recs))
	for i, j := range perm {
		copy(shuffled[i*symbolRecordSize:], recs[j*symbolRecordSize:(j+1)*symbolRecordSize])
	}
	copy(recs, shuffled)
	tab, err := DecodeSymbols(b)
	if err != nil {
		t.Fatal(err)
	}
	got := tab.Symbols()
	if len(got) != len(syms) || !slices.IsSortedFunc(got, func(a, b Symbol) int {
		return cmp.Or(cmp.Compare(a.PID, b.PID), cmp.Compare(a.Begin, b.Begin))
	}) {
		t.Fatalf("Symbols: %d records, sorted %v", len(got), slices.IsSortedFunc(got, func(a, b Symbol) int { return cmp.Compare(a.PID, b.PID) }))
	}
	for _, pid := range []int32{-1, 3, 5, 70000, 9} {
		for addr := uint64(0); addr < 16*1000+64; addr += 3 {
			var want Symbol
			found := false
			for _, s := range got { // sorted: the last one at or below addr wins
				if s.PID == pid && s.Begin <= addr {
					want, found = s, true
				}
			}
			if found && addr > want.End {
				found = false
			}
			s, ok := tab.Lookup(pid, addr)
			if ok != found || ok && s != want {
				t.Fatalf("Lookup(%d, %#x) = %+v, %v; want %+v, %v", pid, addr, s, ok, want, found)
			}
		}
	}
}
