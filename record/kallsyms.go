package record

import (
	"bytes"
	"cmp"
	"errors"
	"slices"

	"nsprof/symbol"
)

// maxKernelFunc bounds how far past its start a kernel symbol extends when
// the next symbol is further away (or there is none).
const maxKernelFunc = 1 << 20

// kallsymsIndex names kernel addresses from the text of /proc/kallsyms
// the recorder read for the capture, without turning its ~120k lines into
// strings: only the names that samples hit are built. It follows
// [symbol.ParseKallsyms]: text symbols (t, T, w, W) with non-zero
// addresses, at one address a global name before a local before a weak
// one, module symbols named "name [module]".
type kallsymsIndex struct {
	data []byte
	syms []ksym // sorted by addr, one per address
}

type ksym struct {
	addr uint64
	off  uint32 // where the line's name starts in data
	rank uint8  // 0 global, 1 local, 2 weak: lower wins at one address
}

// newKallsymsIndex indexes data. It fails with symbol.ErrRestrictedKernel
// when every text address is zero (kptr_restrict).
func newKallsymsIndex(data []byte) (*kallsymsIndex, error) {
	k := &kallsymsIndex{data: data, syms: make([]ksym, 0, bytes.Count(data, []byte{'\n'})+1)}
	text := 0
	for off := 0; off < len(data); {
		end := bytes.IndexByte(data[off:], '\n')
		if end < 0 {
			end = len(data)
		} else {
			end += off
		}
		line := data[off:end]
		start := off
		off = end + 1
		// "ADDR TYPE NAME[\tMODULE]"
		sp := bytes.IndexByte(line, ' ')
		if sp <= 0 || sp+3 > len(line) || line[sp+2] != ' ' {
			continue
		}
		var rank uint8
		switch line[sp+1] {
		case 'T':
		case 't':
			rank = 1
		case 'w', 'W':
			rank = 2
		default:
			continue
		}
		text++
		addr, ok := parseHex(line[:sp])
		if !ok || addr == 0 {
			continue
		}
		k.syms = append(k.syms, ksym{addr: addr, off: uint32(start + sp + 3), rank: rank})
	}
	if len(k.syms) == 0 {
		if text > 0 {
			return nil, symbol.ErrRestrictedKernel
		}
		return nil, errors.New("kallsyms: no text symbols")
	}
	if !slices.IsSortedFunc(k.syms, cmpKsym) {
		slices.SortStableFunc(k.syms, cmpKsym)
	}
	// One entry per address: the preferred alias.
	out := k.syms[:1]
	for _, s := range k.syms[1:] {
		if last := &out[len(out)-1]; s.addr == last.addr {
			if k.preferred(s, *last) {
				*last = s
			}
			continue
		}
		out = append(out, s)
	}
	k.syms = out
	return k, nil
}

func cmpKsym(a, b ksym) int { return cmp.Compare(a.addr, b.addr) }

func parseHex(b []byte) (uint64, bool) {
	if len(b) == 0 || len(b) > 16 {
		return 0, false
	}
	var v uint64
	for _, c := range b {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c -= 'a' - 10
		case c >= 'A' && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		v = v<<4 | uint64(c)
	}
	return v, true
}

// preferred reports whether alias a is to be shown rather than b, as
// symbol's tables choose: global before local before weak, then fewer
// leading underscores, then the shorter name, then the smaller.
func (k *kallsymsIndex) preferred(a, b ksym) bool {
	if a.rank != b.rank {
		return a.rank < b.rank
	}
	an, bn := k.nameBytes(a.off), k.nameBytes(b.off)
	if ua, ub := underscores(an), underscores(bn); ua != ub {
		return ua < ub
	}
	if len(an) != len(bn) {
		return len(an) < len(bn)
	}
	return bytes.Compare(an, bn) < 0
}

func underscores(b []byte) int {
	n := 0
	for n < len(b) && b[n] == '_' {
		n++
	}
	return n
}

// nameBytes returns the symbol name of the line whose name starts at off,
// without its module.
func (k *kallsymsIndex) nameBytes(off uint32) []byte {
	rest := k.data[off:]
	if i := bytes.IndexAny(rest, "\t\n"); i >= 0 {
		rest = rest[:i]
	}
	return bytes.TrimRight(rest, " ")
}

// Lookup returns the kernel symbol holding addr.
func (k *kallsymsIndex) Lookup(addr uint64) (symbol.Symbol, bool) {
	i, found := slices.BinarySearchFunc(k.syms, addr, func(s ksym, a uint64) int { return cmp.Compare(s.addr, a) })
	if !found {
		i--
	}
	if i < 0 {
		return symbol.Symbol{}, false
	}
	s := k.syms[i]
	end := s.addr + maxKernelFunc
	if i+1 < len(k.syms) {
		end = min(end, k.syms[i+1].addr)
	}
	if addr >= end {
		return symbol.Symbol{}, false
	}
	return symbol.Symbol{Name: k.name(s.off), Addr: s.addr, Size: end - s.addr}, true
}

// name returns the name of the line whose name starts at off, with its
// module as "name [module]".
func (k *kallsymsIndex) name(off uint32) string {
	rest := k.data[off:]
	if nl := bytes.IndexByte(rest, '\n'); nl >= 0 {
		rest = rest[:nl]
	}
	name, mod, ok := bytes.Cut(rest, []byte{'\t'})
	if ok {
		return string(name) + " " + string(bytes.TrimSpace(mod))
	}
	return string(bytes.TrimRight(name, " \t"))
}
