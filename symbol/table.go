package symbol

import (
	"cmp"
	"debug/elf"
	"slices"
	"sort"
)

// Symbol is a function (or object) symbol of one file, at link-time
// virtual addresses.
type Symbol struct {
	// Name is the name as stored in the file, still mangled; see [Demangle].
	Name string
	// Addr is the first address of the symbol.
	Addr uint64
	// Size is the number of bytes the symbol covers. In a [Table] a
	// zero-size symbol has been given the size up to the next symbol.
	Size uint64
}

// End returns the first address after the symbol.
func (s Symbol) End() uint64 { return s.Addr + s.Size }

// Table is a sorted, immutable set of symbols searched by address. It is
// safe for concurrent reads.
type Table struct {
	syms []Symbol
}

// maxExtend bounds how far a zero-size symbol is extended towards the next
// symbol when no section tells where its code ends. No function in a
// kernel or a shared library comes near 1 MiB; the bound keeps the last
// symbol before a large gap (kernel text before the modules) from claiming
// the gap.
const maxExtend = 1 << 20

// lastExtend is the size given to a zero-size symbol that has no next
// symbol and no section bounding it.
const lastExtend = 4096

// entry is a symbol being collected, with a preference among aliases at
// the same address: the higher rank wins.
type entry struct {
	Symbol
	rank int
	// ifunc marks an STT_GNU_IFUNC symbol: Addr is its resolver, which
	// the IRELATIVE relocations of a PLT name.
	ifunc bool
}

// addrRange is a half-open range of addresses, used to bound zero-size
// symbols by the section that holds them.
type addrRange struct{ start, end uint64 }

// Binding ranks of ELF symbols: global names are preferred to weak ones,
// and both to local ones, when several name the same address.
const (
	rankLocal  = 0
	rankWeak   = 1
	rankGlobal = 2
)

// bindingRank returns the rank of a symbol of ELF info byte info.
func bindingRank(info byte) int {
	switch elf.ST_BIND(info) {
	case elf.STB_GLOBAL:
		return rankGlobal
	case elf.STB_WEAK:
		return rankWeak
	}
	return rankLocal
}

// NewTable returns a table of syms. It sorts them by address. Aliases (several
// symbols at one address) are reduced to one, preferring a sized symbol, then
// the name with fewest leading underscores (memcpy over __memcpy), then the
// shorter name. A zero-size symbol extends to the next symbol, but at most
// 1 MiB, and the last one covers 4 KiB. NewTable does not modify syms.
func NewTable(syms []Symbol) *Table {
	if sortedSized(syms) {
		// Already as a table holds them (a symbol cache entry's, read
		// back at every recording: the Go compiler's 40 k were copied
		// twice and sorted again).
		return &Table{syms: slices.Clone(syms)}
	}
	es := make([]entry, len(syms))
	for i, s := range syms {
		es[i] = entry{Symbol: s, rank: rankGlobal}
	}
	return buildTable(es, nil)
}

// TableOf returns a table holding syms themselves when they are as a
// table holds them (sorted by strictly increasing address, each of
// non-zero size, as [Table.All] gives them), and NewTable(syms)
// otherwise. syms must not be modified after: a symbol cache entry's,
// read back at every recording, are named from where they were read
// (the Go compiler's 20 k symbols were copied, 0.8 MB, each time).
func TableOf(syms []Symbol) *Table {
	if sortedSized(syms) {
		return &Table{syms: syms}
	}
	return NewTable(syms)
}

// sortedSized reports whether syms are in strictly increasing address
// order and each of non-zero size: what buildTable would leave as they
// are.
func sortedSized(syms []Symbol) bool {
	for i, s := range syms {
		if s.Size == 0 || (i > 0 && s.Addr <= syms[i-1].Addr) {
			return false
		}
	}
	return true
}

// buildTable sorts, dedups and sizes es (which it reorders). bounds, sorted
// by start and not overlapping, are the sections symbols may not extend
// beyond.
func buildTable(es []entry, bounds []addrRange) *Table {
	slices.SortFunc(es, func(a, b entry) int {
		if c := cmp.Compare(a.Addr, b.Addr); c != 0 {
			return c
		}
		return -better(a, b) // best first
	})
	out := make([]Symbol, 0, len(es))
	for i := 0; i < len(es); i++ {
		if i > 0 && es[i].Addr == es[i-1].Addr {
			continue // an alias of a better symbol already kept
		}
		out = append(out, es[i].Symbol)
	}
	for i := range out {
		s := &out[i]
		if s.Size != 0 {
			continue
		}
		limit := s.Addr + lastExtend
		if i+1 < len(out) {
			limit = out[i+1].Addr
		}
		if b, ok := findRange(bounds, s.Addr); ok {
			limit = min(limit, b.end)
		} else if limit-s.Addr > maxExtend {
			limit = s.Addr + maxExtend
		}
		if limit < s.Addr { // wrapped around the top of the address space
			limit = ^uint64(0)
		}
		s.Size = max(limit-s.Addr, 1)
	}
	return &Table{syms: slices.Clip(out)}
}

// better compares two aliases: >0 if a is preferable to b.
func better(a, b entry) int {
	if c := cmp.Compare(a.rank, b.rank); c != 0 {
		return c
	}
	if c := cmp.Compare(b2i(a.Size != 0), b2i(b.Size != 0)); c != 0 {
		return c
	}
	if c := cmp.Compare(leadingUnderscores(b.Name), leadingUnderscores(a.Name)); c != 0 {
		return c
	}
	if c := cmp.Compare(len(b.Name), len(a.Name)); c != 0 {
		return c
	}
	return cmp.Compare(b.Name, a.Name)
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

func leadingUnderscores(s string) int {
	n := 0
	for n < len(s) && s[n] == '_' {
		n++
	}
	return n
}

func findRange(rs []addrRange, addr uint64) (addrRange, bool) {
	i := sort.Search(len(rs), func(i int) bool { return rs[i].end > addr })
	if i < len(rs) && rs[i].start <= addr {
		return rs[i], true
	}
	return addrRange{}, false
}

// lookBack is how many symbols before the nearest one Lookup also tries,
// for symbols nested in a larger one (a local label inside a function).
const lookBack = 4

// Lookup returns the symbol covering addr.
func (t *Table) Lookup(addr uint64) (Symbol, bool) {
	if t == nil {
		return Symbol{}, false
	}
	i := sort.Search(len(t.syms), func(i int) bool { return t.syms[i].Addr > addr }) - 1
	for j := i; j >= 0 && j > i-lookBack; j-- {
		s := t.syms[j]
		if addr-s.Addr < s.Size {
			return s, true
		}
	}
	return Symbol{}, false
}

// Len returns the number of symbols in the table.
func (t *Table) Len() int {
	if t == nil {
		return 0
	}
	return len(t.syms)
}

// All returns the symbols in address order. The slice must not be modified.
func (t *Table) All() []Symbol {
	if t == nil {
		return nil
	}
	return t.syms
}

// merge returns a table of the symbols of both tables; at an address both
// name, a's symbol wins.
func merge(a, b *Table) *Table {
	if b.Len() == 0 {
		return a
	}
	if a.Len() == 0 {
		return b
	}
	es := make([]entry, 0, a.Len()+b.Len())
	for _, s := range a.syms {
		es = append(es, entry{Symbol: s, rank: 1})
	}
	for _, s := range b.syms {
		es = append(es, entry{Symbol: s, rank: 0})
	}
	return buildTable(es, nil)
}
