package symbol

import (
	"slices"
	"sort"
)

// Kernel addresses looked up in a kallsyms index mapped from a file, as the
// recorder's symbol cache keeps this boot's, touch pages all over its 1.6 MB
// of index and 5 MB of text: a binary search per address, and the kernel
// maps 64 kB around every page touched, so that a few hundred lookups left
// the whole 6.6 MB resident (a busy system-wide recording's peak grew by
// that much at its end). Looked up in increasing order, forward from the
// address before, they touch the index and text in order instead, and a
// caller can let go of the pages behind as the walk goes (drop).

// dropEverySyms is how far the walks of LookupSorted and ExcerptDropping go
// between two calls of drop: some 53 kB of index and 180 kB of text of a
// distribution kernel's 122 k symbols, as [KallsymsWithIndexDropping]'s
// check is told by its caller.
const dropEverySyms = 4096

// LookupSorted returns [Kallsyms.Lookup] of each of addrs, which must be in
// increasing order (repeats allowed); found[i] says whether addrs[i] was
// named. It walks the index forward once, calling drop (when not nil)
// each time it has gone some thousand symbols further.
func (k *Kallsyms) LookupSorted(addrs []uint64, drop func()) (syms []Symbol, found []bool) {
	syms, found = make([]Symbol, len(addrs)), make([]bool, len(addrs))
	w := k.walker(drop)
	for j, a := range addrs {
		if i := w.find(a); i >= 0 {
			syms[j], found[j] = k.symbolAt(i, a)
		}
	}
	return syms, found
}

// symbolAt returns the symbol of kept symbol i, which is the last at or
// below addr, as Lookup does: not found when addr is past its bound.
func (k *Kallsyms) symbolAt(i int, addr uint64) (Symbol, bool) {
	s := k.sym(i)
	last := k.lastOf(i)
	if addr > last {
		return Symbol{}, false
	}
	return Symbol{Name: k.name(s.off), Addr: s.addr, Size: last - s.addr + 1}, true
}

// indexWalker finds the symbols of increasing addresses, forward from the
// one before: galloping, then a binary search in the span it stopped in.
type indexWalker struct {
	k       *Kallsyms
	at      int // the symbol found last (or 0)
	dropped int // where drop was last called
	drop    func()
}

func (k *Kallsyms) walker(drop func()) *indexWalker {
	return &indexWalker{k: k, drop: drop}
}

// find returns the index of the last kept symbol at or below addr, -1
// when there is none, for an addr not below the one asked before.
func (w *indexWalker) find(addr uint64) int {
	k, n := w.k, w.k.Len()
	lo := w.at
	if n == 0 || k.addr(lo) > addr {
		if lo == 0 {
			return -1
		}
		// Below the symbol found before: the caller's order was not
		// increasing; answer from the whole index.
		return k.find(addr)
	}
	// k.addr(lo) <= addr: gallop to a hi above addr (or the end).
	step, hi := 1, lo+1
	for hi < n && k.addr(hi) <= addr {
		lo = hi
		step *= 2
		hi = lo + step
	}
	hi = min(hi, n)
	// The last in [lo, hi) at or below addr.
	i := lo + sort.Search(hi-lo, func(j int) bool { return k.addr(lo+j) > addr }) - 1
	w.at = i
	if w.drop != nil && i-w.dropped >= dropEverySyms {
		w.drop()
		w.dropped = i
	}
	return i
}

// sortedCopy returns addrs in increasing order, addrs itself when it is.
func sortedCopy(addrs []uint64) []uint64 {
	if slices.IsSorted(addrs) {
		return addrs
	}
	out := slices.Clone(addrs)
	slices.Sort(out)
	return out
}
