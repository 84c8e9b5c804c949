package symbol

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// bigKallsyms returns a kallsyms text of n text symbols 0x40 bytes apart
// from 0xffffffff81000000, with a weak alias every 7th and a module's
// symbols after a gap, as a distribution kernel's (120 k lines) is shaped.
func bigKallsyms(n int) []byte {
	var b strings.Builder
	a := uint64(0xffffffff81000000)
	for i := range n {
		fmt.Fprintf(&b, "%016x T func_%d\n", a, i)
		if i%7 == 0 {
			fmt.Fprintf(&b, "%016x W alias_%d\n", a, i)
		}
		a += 0x40
	}
	a = 0xffffffffc0000000
	for i := range n / 10 {
		fmt.Fprintf(&b, "%016x t mod_func_%d\t[mod]\n", a, i)
		a += 0x100
	}
	return []byte(b.String())
}

// scatteredAddrs returns addresses in, between, past and before k's
// symbols, picked at random, unsorted, with repeats.
func scatteredAddrs(k *Kallsyms, n int) []uint64 {
	r := rand.New(rand.NewPCG(3, 4))
	var addrs []uint64
	for range n {
		s := k.sym(r.IntN(k.Len()))
		addrs = append(addrs, s.addr+uint64(r.IntN(0x200)), s.addr-1, s.addr)
	}
	return append(addrs, 0, 1, addrs[0], 1<<63, ^uint64(0))
}

// TestLookupSorted: the forward walk names every address as Lookup does,
// and calls drop as it goes, not once per address.
func TestLookupSorted(t *testing.T) {
	texts := map[string][]byte{"fixture": []byte(kallsymsFixture), "big": bigKallsyms(120_000)}
	for name, text := range texts {
		k, err := NewKallsyms(text)
		if err != nil {
			t.Fatal(err)
		}
		addrs := scatteredAddrs(k, 2000)
		slices.Sort(addrs)
		drops := 0
		syms, found := k.LookupSorted(addrs, func() { drops++ })
		named := 0
		for i, a := range addrs {
			want, ok := k.Lookup(a)
			if found[i] != ok || syms[i] != want {
				t.Fatalf("%s: %#x: LookupSorted gives %+v (%v), Lookup %+v (%v)", name, a, syms[i], found[i], want, ok)
			}
			if ok {
				named++
			}
		}
		if named == 0 {
			t.Fatalf("%s: no address named", name)
		}
		if most := k.Len()/dropEverySyms + 1; drops > most || (k.Len() > 4*dropEverySyms && drops < most/2) {
			t.Errorf("%s: drop called %d times over %d symbols, want about %d", name, drops, k.Len(), most)
		}
		// Out of order, the walk still answers (from the whole index).
		s, ok := k.LookupSorted([]uint64{addrs[len(addrs)-3], addrs[len(addrs)/2]}, nil)
		if want, wok := k.Lookup(addrs[len(addrs)/2]); ok[1] != wok || s[1] != want {
			t.Errorf("%s: an address below the one before: %+v (%v), want %+v (%v)", name, s[1], ok[1], want, wok)
		}
	}
}

// TestExcerptDropping: the excerpt of unsorted addresses made walking
// forward is Excerpt's, byte for byte, with drop called as it goes.
func TestExcerptDropping(t *testing.T) {
	text := bigKallsyms(120_000)
	k, err := NewKallsyms(text)
	if err != nil {
		t.Fatal(err)
	}
	addrs := scatteredAddrs(k, 2000)
	want := k.Excerpt(addrs)
	drops := 0
	got := k.ExcerptDropping(addrs, func() { drops++ })
	if !bytes.Equal(got, want) {
		t.Fatalf("ExcerptDropping gives %d bytes, Excerpt %d", len(got), len(want))
	}
	if drops == 0 {
		t.Error("drop never called over 120 k symbols")
	}
	if _, err := NewKallsyms(got); err != nil {
		t.Fatal(err)
	}
}
