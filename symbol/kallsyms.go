package symbol

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"errors"
	"math"
	"slices"
	"sort"
	"strings"

	"nsprof/internal/procfmt"
)

// maxKernelFunc bounds how far past its start a kernel symbol extends when
// the next symbol is further away, or there is none: no kernel function
// comes near 1 MiB, and the bound keeps the last symbol of the kernel
// image from claiming the gap up to the modules.
const maxKernelFunc = 1 << 20

// ErrNoKernelText is returned by [NewKallsyms] for a text that lists no
// text symbol at all.
var ErrNoKernelText = errors.New("kallsyms: no text symbols")

// Kallsyms names kernel addresses from the text of /proc/kallsyms
// ("ADDR TYPE NAME" with an optional "\t[MODULE]" per line). It is the one
// kernel symbol index of nsprof: the recorder names kernel frames with it
// at record end and the reports with it from the capture's embedded copy,
// so one address gets one name in both. Its rules:
//
//   - The text symbols are kept: types T and t (code), W and w (weak code);
//     other types (data, absolute) are neither kept nor boundaries.
//   - Symbols at address zero are left out.
//   - At one address, a global name (T) is shown before a weak one (W, w),
//     and both before a local one (t); then the name with the fewest
//     leading underscores, then the shorter, then the smaller one, as
//     [Table] chooses among ELF aliases.
//   - A symbol extends to the next kept symbol's address, at most 1 MiB.
//   - A module's symbol is named "name [module]", as perf prints it;
//     [SplitModule] splits it again.
//
// It keeps the text and indexes it without making a string of each of its
// ~200k lines: a name is built when it is looked up. It does no I/O. It is
// immutable and safe for concurrent use.
type Kallsyms struct {
	data []byte
	// idx is the symbols kept, sorted by addr, one per address, in
	// AppendIndex's encoding (kallsymsIndexEntry bytes each): an index
	// taken back from the symbol cache is used where it was read
	// rather than copied (1.6 MB of a warm recording's peak heap).
	idx []byte
}

// ksym is one kept symbol: its address and where its line's name starts
// in data.
type ksym struct {
	addr uint64
	off  uint32
	rank uint8 // 0 global, 1 weak, 2 local: lower wins at one address
}

// NewKallsyms indexes data, the contents of /proc/kallsyms; the index
// keeps data, which must not be modified afterwards. A malformed line is
// returned as a *[SyntaxError] naming it. When every text symbol's address
// is zero, the kernel hid them from the reader (kernel.kptr_restrict) and
// NewKallsyms returns [ErrRestrictedKernel]; a text without text symbols
// gives [ErrNoKernelText].
func NewKallsyms(data []byte) (*Kallsyms, error) {
	if len(data) > math.MaxUint32 {
		return nil, &SyntaxError{File: "kallsyms", Msg: "larger than 4 GiB"}
	}
	k := &Kallsyms{data: data}
	syms := make([]ksym, 0, bytes.Count(data, []byte{'\n'})+1)
	text, lineNo := 0, 0
	for off := 0; off < len(data); {
		lineNo++
		end := bytes.IndexByte(data[off:], '\n')
		if end < 0 {
			end = len(data)
		} else {
			end += off
		}
		line, start := data[off:end], off
		off = end + 1
		if len(line) == 0 || line[0] <= ' ' && len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		// "ADDR TYPE NAME[\tMODULE]"
		sp := bytes.IndexByte(line, ' ')
		if sp <= 0 || sp+3 >= len(line) || line[sp+2] != ' ' || line[sp+1] == ' ' {
			return nil, syntaxError("kallsyms", lineNo, line, "want ADDR TYPE NAME")
		}
		addr, ok := procfmt.ParseHex(line[:sp])
		if !ok {
			return nil, syntaxError("kallsyms", lineNo, line, "bad address")
		}
		var rank uint8
		switch line[sp+1] {
		case 'T':
		case 'W', 'w':
			rank = 1
		case 't':
			rank = 2
		default:
			continue
		}
		text++
		if addr == 0 {
			continue
		}
		s := ksym{addr: addr, off: uint32(start + sp + 3), rank: rank}
		if c := line[sp+3]; c <= ' ' && len(k.nameBytes(s.off)) == 0 {
			return nil, syntaxError("kallsyms", lineNo, line, "empty name")
		}
		syms = append(syms, s)
	}
	if len(syms) == 0 {
		if text > 0 {
			return nil, ErrRestrictedKernel
		}
		return nil, ErrNoKernelText
	}
	if !slices.IsSortedFunc(syms, cmpKsym) {
		slices.SortStableFunc(syms, cmpKsym)
	}
	// One entry per address: the preferred alias.
	out := syms[:1]
	for _, s := range syms[1:] {
		if last := &out[len(out)-1]; s.addr == last.addr {
			if k.preferred(s, *last) {
				*last = s
			}
			continue
		}
		out = append(out, s)
	}
	k.idx = make([]byte, 0, len(out)*kallsymsIndexEntry)
	for _, s := range out {
		k.idx = appendKsym(k.idx, s)
	}
	return k, nil
}

func cmpKsym(a, b ksym) int { return cmp.Compare(a.addr, b.addr) }

// preferred reports whether alias a is to be shown rather than b.
func (k *Kallsyms) preferred(a, b ksym) bool {
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
func (k *Kallsyms) nameBytes(off uint32) []byte {
	rest := k.data[off:]
	if i := bytes.IndexAny(rest, "\t\n"); i >= 0 {
		rest = rest[:i]
	}
	return bytes.TrimRight(rest, " \r")
}

// Len returns the number of addresses named: one per address, aliases
// reduced to the preferred name.
func (k *Kallsyms) Len() int { return len(k.idx) / kallsymsIndexEntry }

// sym returns kept symbol i.
func (k *Kallsyms) sym(i int) ksym {
	e := k.idx[i*kallsymsIndexEntry : (i+1)*kallsymsIndexEntry]
	return ksym{addr: binary.LittleEndian.Uint64(e), off: binary.LittleEndian.Uint32(e[8:]), rank: e[12]}
}

// addr returns the address of kept symbol i.
func (k *Kallsyms) addr(i int) uint64 {
	return binary.LittleEndian.Uint64(k.idx[i*kallsymsIndexEntry:])
}

// find returns the index of the last kept symbol at or below addr, -1
// when there is none.
func (k *Kallsyms) find(addr uint64) int {
	return sort.Search(k.Len(), func(i int) bool { return k.addr(i) > addr }) - 1
}

// appendKsym appends s to b in AppendIndex's encoding.
func appendKsym(b []byte, s ksym) []byte {
	b = binary.LittleEndian.AppendUint64(b, s.addr)
	b = binary.LittleEndian.AppendUint32(b, s.off)
	return append(b, s.rank)
}

// Lookup returns the kernel symbol holding addr, its Size reaching the
// next symbol (at most 1 MiB).
func (k *Kallsyms) Lookup(addr uint64) (Symbol, bool) {
	i := k.find(addr)
	if i < 0 {
		return Symbol{}, false
	}
	return k.symbolAt(i, addr)
}

// lastOf returns the last byte of kept symbol i: the one before the next
// symbol's address, at most maxKernelFunc past its own. The last byte,
// not the end: a symbol near the top of the address space has no end
// that fits in 64 bits.
func (k *Kallsyms) lastOf(i int) uint64 {
	a := k.addr(i)
	last := a + (maxKernelFunc - 1)
	if last < a {
		last = math.MaxUint64
	}
	if i+1 < k.Len() {
		last = min(last, k.addr(i+1)-1)
	}
	return last
}

// name returns the name of the line whose name starts at off, with its
// module as "name [module]".
func (k *Kallsyms) name(off uint32) string {
	rest := k.data[off:]
	if nl := bytes.IndexByte(rest, '\n'); nl >= 0 {
		rest = rest[:nl]
	}
	name, mod, ok := bytes.Cut(rest, []byte{'\t'})
	if mod = bytes.TrimSpace(mod); ok && len(mod) > 0 {
		return string(bytes.TrimRight(name, " \r")) + " " + string(mod)
	}
	return string(bytes.TrimRight(name, " \r"))
}

// SplitModule splits a kernel symbol name from [Kallsyms] into the
// function name and the module ("" for the kernel image).
func SplitModule(name string) (sym, module string) {
	if i := strings.LastIndex(name, " ["); i >= 0 && strings.HasSuffix(name, "]") {
		return name[:i], name[i+2 : len(name)-1]
	}
	return name, ""
}
