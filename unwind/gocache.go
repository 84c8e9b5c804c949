package unwind

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// A Go binary's table (its pclntab's function entries and pcsp tables,
// no CFI rows) can be kept across recordings: AppendGo encodes it and
// DecodeGo takes it back. Loading the Go compiler's table from its
// 8.3 MB pclntab cost some 6 ms of CPU in a quiet benchmark, and more
// inside a recording (its pages read while the recorder's own were
// cold): over a loop of Go toolchain commands every recording loaded
// the compiler's, go's and vet's tables again, some 7 % of the
// recorder's CPU. Decoded, the same table costs a copy of its 0.6 MB.

// goTableMagic starts an encoded table; its version changes with the
// encoding.
const goTableMagic = "nsprof-unwind-go 1\n"

// maxGoSegments bounds the segments an encoded table may have.
const maxGoSegments = 64

// AppendGo appends to b the encoding of t, when t is a Go binary's table
// from its pclntab alone, and reports whether it was: a table with rows
// or FDEs from CFI (cgo, assembly with .eh_frame) is not encoded. The encoding is
// the segments, then the text address, pc quantum and function count,
// the function entries, the pcsp offsets and the pcsp tables, integers
// little-endian.
func (t *Table) AppendGo(b []byte) ([]byte, bool) {
	g := t.gofuncs
	if g == nil || len(t.rows) > 0 || t.eh != nil || len(t.segs) > maxGoSegments || g.quantum == 0 || g.quantum > 255 {
		return b, false
	}
	le := binary.LittleEndian
	b = append(b, goTableMagic...)
	b = le.AppendUint32(b, uint32(len(t.segs)))
	for _, s := range t.segs {
		b = le.AppendUint64(b, s.off)
		b = le.AppendUint64(b, s.vaddr)
		b = le.AppendUint64(b, s.filesz)
	}
	b = le.AppendUint64(b, g.text)
	b = append(b, byte(g.quantum))
	b = le.AppendUint32(b, uint32(g.nfunc))
	for _, e := range g.entries {
		b = le.AppendUint32(b, e)
	}
	for _, s := range g.sp {
		b = le.AppendUint32(b, s)
	}
	b = le.AppendUint32(b, uint32(len(g.pcsp)))
	return append(b, g.pcsp...), true
}

// errGoTable is wrapped by the errors of DecodeGo.
var errGoTable = errors.New("encoded Go unwind table")

// DecodeGo returns the table AppendGo encoded in b, which it checks
// whole: every count against the bytes left, the function entries in
// order, every pcsp offset inside the pcsp tables. A table that does not
// check is an error, never a panic. The table keeps no reference to b.
func DecodeGo(b []byte) (*Table, error) {
	bad := func(what string) (*Table, error) { return nil, fmt.Errorf("%w: %s", errGoTable, what) }
	if len(b) < len(goTableMagic) || string(b[:len(goTableMagic)]) != goTableMagic {
		return bad("no header")
	}
	le := binary.LittleEndian
	r := b[len(goTableMagic):]
	take := func(n uint64) []byte {
		if uint64(len(r)) < n {
			return nil
		}
		p := r[:n]
		r = r[n:]
		return p
	}
	p := take(4)
	if p == nil || le.Uint32(p) > maxGoSegments {
		return bad("segment count")
	}
	t := &Table{segs: make([]segment, le.Uint32(p))}
	for i := range t.segs {
		p := take(24)
		if p == nil {
			return bad("segments cut short")
		}
		t.segs[i] = segment{off: le.Uint64(p), vaddr: le.Uint64(p[8:]), filesz: le.Uint64(p[16:])}
	}
	p = take(13)
	if p == nil {
		return bad("function table header cut short")
	}
	text, quantum, nfunc := le.Uint64(p), uint64(p[8]), uint64(le.Uint32(p[9:]))
	if quantum == 0 || nfunc == 0 {
		return bad("no quantum or no functions")
	}
	ents, sps := take(4*(nfunc+1)), take(4*nfunc)
	if ents == nil || sps == nil {
		return bad("functions cut short")
	}
	p = take(4)
	if p == nil || uint64(le.Uint32(p)) != uint64(len(r)) {
		return bad("pcsp tables of another length")
	}
	g := &goFuncs{
		text: text, nfunc: int(nfunc), quantum: quantum,
		entries: make([]uint32, nfunc+1), sp: make([]uint32, nfunc),
		pcsp:    make([]byte, len(r)),
		covered: func(uint64) bool { return false }, funcs: make(map[int]*goRecent),
	}
	copy(g.pcsp, r)
	for i := range g.entries {
		g.entries[i] = le.Uint32(ents[4*i:])
		if i > 0 && g.entries[i] < g.entries[i-1] {
			return bad("function entries out of order")
		}
	}
	for i := range g.sp {
		g.sp[i] = le.Uint32(sps[4*i:])
		if uint64(g.sp[i]) > uint64(len(g.pcsp)) {
			return bad("pcsp offset past the tables")
		}
	}
	g.index()
	t.gofuncs, t.goBytes = g, g.size()
	return t, nil
}
