package symbol

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
)

func TestNewTable(t *testing.T) {
	in := []Symbol{
		{Name: "c", Addr: 0x3000, Size: 0x10},
		{Name: "__a_alias", Addr: 0x1000},
		{Name: "a", Addr: 0x1000},
		{Name: "b", Addr: 0x2000, Size: 0x100},
		{Name: "last", Addr: 0x5000},
	}
	orig := append([]Symbol(nil), in...)
	tab := NewTable(in)
	if in[0] != orig[0] || in[1] != orig[1] {
		t.Error("NewTable modified its argument")
	}
	if tab.Len() != 4 {
		t.Errorf("Len = %d, want 4 (the alias dropped)", tab.Len())
	}
	for _, tc := range []struct {
		addr uint64
		want string
	}{
		{0x0fff, ""},
		{0x1000, "a"},
		{0x1fff, "a"}, // zero size: up to the next symbol
		{0x2000, "b"},
		{0x20ff, "b"},
		{0x2100, ""}, // b has a size
		{0x300f, "c"},
		{0x3010, ""},
		{0x5fff, "last"}, // the last zero-size symbol covers 4 KiB
		{0x6000, ""},
	} {
		s, ok := tab.Lookup(tc.addr)
		if ok != (tc.want != "") || s.Name != tc.want {
			t.Errorf("Lookup(%#x) = %q, %v; want %q", tc.addr, s.Name, ok, tc.want)
		}
	}
	if s, _ := tab.Lookup(0x1000); s.Size != 0x1000 {
		t.Errorf("a has size %#x, want %#x", s.Size, 0x1000)
	}
	var empty *Table
	if _, ok := empty.Lookup(1); ok || empty.Len() != 0 {
		t.Error("nil table")
	}
	if _, ok := NewTable(nil).Lookup(0); ok {
		t.Error("empty table found a symbol")
	}
}

func TestTableBounds(t *testing.T) {
	es := []entry{{Symbol: Symbol{Name: "f", Addr: 0x1000}}, {Symbol: Symbol{Name: "g", Addr: 0x9000}}}
	tab := buildTable(es, []addrRange{{0x1000, 0x1100}, {0x9000, 0x9010}})
	if _, ok := tab.Lookup(0x1100); ok {
		t.Error("f extends beyond its section")
	}
	if s, ok := tab.Lookup(0x900f); !ok || s.Name != "g" {
		t.Error("g does not cover its section")
	}
	// Global beats weak beats local, whatever the name.
	es = []entry{{Symbol: Symbol{Name: "loc", Addr: 1}, rank: rankLocal}, {Symbol: Symbol{Name: "__glob", Addr: 1}, rank: rankGlobal}, {Symbol: Symbol{Name: "weak", Addr: 1}, rank: rankWeak}}
	if s, _ := buildTable(es, nil).Lookup(1); s.Name != "__glob" {
		t.Errorf("alias chosen %q, want the global __glob", s.Name)
	}
	// Near the top of the address space nothing wraps.
	tab = NewTable([]Symbol{{Name: "top", Addr: ^uint64(0) - 10}})
	if s, ok := tab.Lookup(^uint64(0) - 1); !ok || s.Name != "top" {
		t.Errorf("top: %q %v", s.Name, ok)
	}
}

func TestTableConcurrent(t *testing.T) {
	var syms []Symbol
	for i := range 1000 {
		syms = append(syms, Symbol{Name: "f", Addr: uint64(i) * 16, Size: 16})
	}
	tab := NewTable(syms)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for a := uint64(0); a < 16000; a++ {
				if _, ok := tab.Lookup(a); !ok {
					t.Errorf("Lookup(%#x) failed", a)
					return
				}
			}
		})
	}
	wg.Wait()
}

// NewTable of symbols already sorted, one at an address and sized (as a
// symbol cache entry holds them) gives the table the general path gives,
// and keeps no reference to them.
func TestNewTableSorted(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	var syms []Symbol
	addr := uint64(0x400000)
	for i := range 2000 {
		addr += 1 + r.Uint64N(64)
		syms = append(syms, Symbol{Name: fmt.Sprint("f", i), Addr: addr, Size: 1 + r.Uint64N(100)})
	}
	fast := NewTable(syms)
	// The general path: one zero-size symbol at the end, sized to
	// lastExtend, then dropped from what is compared.
	slow := NewTable(append(slices.Clone(syms), Symbol{Name: "end", Addr: addr + 1<<30}))
	if got, want := fast.All(), slow.All()[:len(syms)]; !slices.Equal(got, want) {
		t.Fatal("the table of sorted, sized symbols differs from the general path's")
	}
	syms[0].Name = "changed"
	if fast.All()[0].Name == "changed" {
		t.Error("the table shares the slice it was made of")
	}
	// Not sorted, or with a symbol of size 0: the general path.
	unsorted := []Symbol{{Name: "b", Addr: 0x2000, Size: 4}, {Name: "a", Addr: 0x1000, Size: 4}}
	if got := NewTable(unsorted).All(); got[0].Name != "a" {
		t.Errorf("unsorted symbols not sorted: %v", got)
	}
	zero := []Symbol{{Name: "a", Addr: 0x1000}, {Name: "b", Addr: 0x1010, Size: 4}}
	if got := NewTable(zero).All(); got[0].Size != 0x10 {
		t.Errorf("a zero-size symbol not sized to the next: %v", got)
	}
}

// TableOf holds symbols already as a table holds them without a copy,
// and gives NewTable's table of any others.
func TestTableOf(t *testing.T) {
	syms := []Symbol{{Name: "a", Addr: 0x1000, Size: 4}, {Name: "b", Addr: 0x2000, Size: 4}}
	tab := TableOf(syms)
	if got := tab.All(); len(got) != 2 || &got[0] != &syms[0] {
		t.Errorf("TableOf of sorted, sized symbols copied them: %v", got)
	}
	if s, ok := tab.Lookup(0x2002); !ok || s.Name != "b" {
		t.Errorf("Lookup(0x2002) = %v, %v", s, ok)
	}
	unsorted := []Symbol{{Name: "b", Addr: 0x2000, Size: 4}, {Name: "a", Addr: 0x1000}}
	got := TableOf(unsorted).All()
	if want := NewTable(unsorted).All(); !slices.Equal(got, want) || unsorted[0].Name != "b" {
		t.Errorf("TableOf of unsorted symbols = %v, want NewTable's %v, the slice unchanged", got, want)
	}
}

// BenchmarkNewTableSorted makes the table of 40,000 sorted, sized
// symbols, as a recording does from the Go compiler's cache entry.
func BenchmarkNewTableSorted(b *testing.B) {
	syms := make([]Symbol, 40000)
	for i := range syms {
		syms[i] = Symbol{Name: "f", Addr: 0x400000 + 64*uint64(i), Size: 48}
	}
	b.ReportAllocs()
	for b.Loop() {
		NewTable(syms)
	}
}
