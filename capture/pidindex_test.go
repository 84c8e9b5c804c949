package capture

import (
	"math/rand/v2"
	"testing"
)

// TestLookupByProcess: the lookups that search one process's records
// answer as a search of every record by (pid, address) does, across
// processes with no records, adjacent processes, duplicate addresses and
// addresses before, between and after a process's records.
func TestLookupByProcess(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var syms []Symbol
	var recs []AddrLines
	for _, pid := range []int32{-1, 0, 3, 4, 9} {
		for range r.IntN(40) {
			b := uint64(r.IntN(64)) * 16
			syms = append(syms, Symbol{PID: pid, Begin: b, End: b + uint64(r.IntN(24)), Name: "f"})
			recs = append(recs, AddrLines{PID: pid, Addr: uint64(r.IntN(64)) * 8, Frames: []SourceFrame{{Function: "g", Line: len(recs) + 1}}})
		}
	}
	b, err := EncodeSymbols(syms)
	if err != nil {
		t.Fatal(err)
	}
	st, err := DecodeSymbols(b)
	if err != nil {
		t.Fatal(err)
	}
	lt, err := DecodeLines(EncodeLines(recs))
	if err != nil {
		t.Fatal(err)
	}
	all := st.Symbols()
	for _, pid := range []int32{-2, -1, 0, 1, 3, 4, 5, 9, 10} {
		for addr := uint64(0); addr < 64*16+32; addr++ {
			// The last record at or before (pid, addr), if of pid.
			var want Symbol
			found := false
			for _, s := range all {
				if s.PID < pid || s.PID == pid && s.Begin <= addr {
					want, found = s, true
				}
			}
			found = found && want.PID == pid && addr <= want.End
			got, ok := st.Lookup(pid, addr)
			if ok != found || ok && got != want {
				t.Fatalf("symbols: Lookup(%d, %#x) = %+v, %v; want %+v, %v", pid, addr, got, ok, want, found)
			}
			// The first record of (pid, addr).
			var wantLine int
			for i := range lt.recs {
				if r := &lt.recs[i]; r.key == pid && r.addr == addr {
					wantLine = r.frames[0].Line
					break
				}
			}
			fr, ok := lt.Lookup(pid, addr)
			if ok != (wantLine > 0) || ok && fr[0].Line != wantLine {
				t.Fatalf("lines: Lookup(%d, %#x) = %v, %v; want line %d", pid, addr, fr, ok, wantLine)
			}
		}
	}
}
