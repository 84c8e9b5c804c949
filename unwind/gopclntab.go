package unwind

import (
	"debug/elf"
	"encoding/binary"
	"io"
	"math"
	"slices"
	"sync"
	"sync/atomic"

	"nsprof/internal/gopclntab"
	"nsprof/internal/pageread"
)

// goFuncs gives the rows of the functions of a Go pclntab from their pcsp
// tables: Go code has no .eh_frame, and stripped Go binaries no
// .debug_frame either, but the runtime's own unwinder needs each
// function's stack-pointer delta at every pc. The CFA is rsp + delta + 8
// with the return address below it; once the frame is set up (delta >= 8:
// "PUSHQ BP" comes first on amd64) the caller's rbp is at CFA-16.
// Functions not understood are left out. The table is found and parsed by
// internal/gopclntab, as symbol's names and lines are.
//
// A function's pcsp table is decoded the first time an address in it is
// looked up: a binary's table decoded whole (the Go compiler's: 40 k
// functions, some 30 MB of rows) cost tens of milliseconds and its memory
// in every recording that sampled the binary at all, for the few hundred
// functions samples hit. Of the pclntab only the function entries and the
// pcsp tables are kept, copied out when the table is loaded: 0.6 MB of
// the Go compiler's 8.3 MB (its names, files, lines and other pcdata are
// symbol's, read at the end of a recording), which the recorder held for
// each Go binary sampled while it recorded. Safe for concurrent use.
type goFuncs struct {
	text    uint64
	nfunc   int
	quantum uint64
	// entries holds nfunc+1 function starts as offsets from text, the
	// last the end of the last function.
	entries []uint32
	// sp holds, per function, one more than the offset in pcsp of its
	// pcsp table; 0 for none.
	sp   []uint32
	pcsp []byte
	// buckets index entries by address, as the Go runtime's findfunctab
	// does: a binary search of the compiler's 40 k entries missed the
	// processor's caches at each step, and was a third of the lookups'
	// time over a compile loop. Nil when the text is too sparse for it.
	buckets []funcBucket
	// covered says whether the object's CFI rows cover an address: a
	// function whose entry they cover is theirs (cgo and assembly with
	// .eh_frame), not the pclntab's.
	covered func(uint64) bool

	mu sync.Mutex
	// funcs holds the functions decoded, by index, rows nil for one
	// left out; recent points into them (one made at each miss of
	// recent was a third of the lookups' time).
	funcs map[int]*goRecent
	// recent holds functions looked up lately, by address: samples come
	// back to the same few, and the search of the function table (160 kB
	// for the Go compiler) missed the processor's caches each time.
	recent [256]atomic.Pointer[goRecent]
}

// funcBucket holds, for a bucketSize range of text, the index of the
// last function starting at or before each of its subBuckets parts, as
// base plus sub (saturated at 255: the search goes on from there).
type funcBucket struct {
	base uint32
	sub  [subBuckets]uint8
}

const (
	bucketShift = 12 // a bucket covers 4 KiB of text
	subBuckets  = 16 // of 256 bytes each
	subShift    = bucketShift - 4
)

// index makes g.buckets from g.entries: 20 bytes for every 4 KiB of
// text (58 KB for the Go compiler's 11.8 MB), none when the functions'
// span is far larger than their number accounts for (a hostile table).
func (g *goFuncs) index() {
	span := uint64(g.entries[g.nfunc])
	nb := span>>bucketShift + 1
	if nb > 4*uint64(g.nfunc)+1024 {
		return
	}
	g.buckets = make([]funcBucket, nb)
	j := 0
	for b := range g.buckets {
		for k := range subBuckets {
			p := uint64(b)<<bucketShift | uint64(k)<<subShift
			for j+1 < g.nfunc && uint64(g.entries[j+1]) <= p {
				j++
			}
			if k == 0 {
				g.buckets[b].base = uint32(j)
			}
			g.buckets[b].sub[k] = uint8(min(j-int(g.buckets[b].base), 255))
		}
	}
}

// lookup returns the index of the last function whose entry is at off
// or below (an offset from text), or -1.
func (g *goFuncs) lookup(off uint64) int {
	if g.buckets == nil {
		// The last function whose entry is at off or below.
		lo, hi := 0, g.nfunc
		for lo < hi {
			m := int(uint(lo+hi) >> 1)
			if g.entry(m) <= off {
				lo = m + 1
			} else {
				hi = m
			}
		}
		return lo - 1
	}
	i := g.nfunc - 1
	if b := off >> bucketShift; b < uint64(len(g.buckets)) {
		bk := &g.buckets[b]
		i = int(bk.base) + int(bk.sub[(off>>subShift)%subBuckets])
	}
	for i+1 < g.nfunc && g.entry(i+1) <= off {
		i++
	}
	if g.entry(i) > off {
		return -1
	}
	return i
}

// goRecent is a function looked up lately: its rows for addresses from
// start to end.
type goRecent struct {
	start, end uint64
	rows       []goRow
}

// goRow is a decoded Go function's row, kept in 8 bytes rather than a
// row's 24: a Go function's frame is described by its stack pointer's
// offset alone (the pcsp table's value), from which row makes the rest.
// Decoded functions stay in memory for the whole recording: over a loop
// of Go toolchain compiles they were the largest growing part of the
// recorder's heap.
type goRow struct {
	// off is the row's first address, as an offset from its function's
	// start.
	off uint32
	// sp is the frame's size below the return address.
	sp int32
}

// row returns r as the row of a function starting at start.
func (r goRow) row(start uint64) row {
	out := row{addr: start + uint64(r.off), cfa: cfaSP, cfaOff: r.sp + 8, ra: ruleCFA, raOff: -8}
	if r.sp >= 8 {
		out.bp, out.bpOff = ruleCFA, -16
	}
	return out
}

// newGoFuncs parses the pclntab in src and copies out what unwinding
// needs of it; nil if it is not one of 64-bit pointers. src is not kept.
func newGoFuncs(src *pageread.Source, textAddr uint64) *goFuncs {
	l, err := gopclntab.ParseLayout(src.At(0, gopclntab.HeaderSize), src.Len(), binary.LittleEndian)
	if err != nil || l == nil || l.PtrSize != 8 || l.NFunc <= 0 || src.Len()-l.FuncTab < 8*uint64(l.NFunc)+4 {
		return nil
	}
	text := l.TextStart
	if text == 0 {
		text = textAddr
	}
	le := binary.LittleEndian
	// The function table's pairs (entry, offset of the _func record),
	// and the end of the last function.
	pairs := src.At(l.FuncTab, 8*uint64(l.NFunc)+4)
	if len(pairs) < 8*l.NFunc+4 {
		return nil
	}
	ftabLen, pctabLen := src.Len()-l.FuncTab, src.Len()-l.PCTab
	g := &goFuncs{text: text, nfunc: l.NFunc, quantum: l.Quantum, covered: func(uint64) bool { return false }, funcs: make(map[int]*goRecent)}
	g.entries = make([]uint32, l.NFunc+1)
	funcOffs := make([]uint32, l.NFunc)
	for i := range g.entries {
		g.entries[i] = le.Uint32(pairs[8*i:])
		if i < l.NFunc {
			funcOffs[i] = le.Uint32(pairs[8*i+4:])
		}
	}
	// What is kept is copied as it is read from here on: the pages
	// read are read into again, not made anew (8 MB of them at each
	// load of the Go compiler's table).
	src.ReusePages()
	g.sp = make([]uint32, l.NFunc)
	// A table shared by functions is kept once. The copies are bounded
	// by the size of the pclntab, so a hostile table pointing every
	// function at its largest costs no more than the table itself.
	type kept struct{ at, n uint32 }
	seen := make(map[uint32]kept)
	budget := src.Len()
	for i := range l.NFunc {
		entry, end := uint64(g.entries[i]), uint64(g.entries[i+1])
		funcOff := uint64(funcOffs[i])
		if end <= entry || funcOff+20 > ftabLen {
			continue
		}
		w := src.At(l.FuncTab+funcOff+16, 4)
		if len(w) < 4 {
			continue
		}
		pcsp := le.Uint32(w)
		if pcsp == 0 || uint64(pcsp) >= pctabLen {
			continue
		}
		if k, ok := seen[pcsp]; ok {
			if n := gopclntab.Extent(g.pcsp[k.at:k.at+k.n], text+entry, text+end, l.Quantum); n > 0 {
				g.sp[i] = k.at + 1 // what this function decodes is in the copy
				continue
			}
		}
		src.Window(l.PCTab+uint64(pcsp), func(tab []byte) bool {
			n := gopclntab.Extent(tab, text+entry, text+end, l.Quantum)
			if n <= 0 {
				return false
			}
			if uint64(len(g.pcsp)+n) > budget || len(g.pcsp)+n >= math.MaxUint32 {
				return true
			}
			at := uint32(len(g.pcsp))
			g.pcsp = append(g.pcsp, tab[:n]...)
			seen[pcsp] = kept{at, uint32(n)}
			g.sp[i] = at + 1
			return true
		})
	}
	g.pcsp = slices.Clip(g.pcsp)
	g.index()
	return g
}

// size returns the memory g holds once loaded, in bytes.
func (g *goFuncs) size() int {
	return 4*cap(g.entries) + 4*cap(g.sp) + cap(g.pcsp) + (4+subBuckets)*cap(g.buckets)
}

// entry returns the start of function i, as an offset from text.
func (g *goFuncs) entry(i int) uint64 { return uint64(g.entries[i]) }

// decode returns the rows of function i, which cover it to its end; nil
// when its pcsp table is missing or not understood. The table is read
// twice, first to count its rows: decoded functions stay in memory for the
// whole recording, and rows grown by append held up to twice what they
// used (and left the smaller copies as garbage).
func (g *goFuncs) decode(i int) []goRow {
	entry, end := g.entry(i), g.end(i)
	if end <= entry || end-entry > math.MaxUint32 || g.sp[i] == 0 {
		return nil
	}
	tab := g.pcsp[g.sp[i]-1:]
	n, bad := 0, false
	ok := gopclntab.Decode(tab, entry, end, g.quantum, func(_, _ uint64, sp int32) bool {
		n++
		bad = sp < 0 || sp > 1<<24
		return !bad
	})
	if !ok || bad || n == 0 {
		return nil
	}
	rows := make([]goRow, 0, n)
	gopclntab.Decode(tab, entry, end, g.quantum, func(pc, _ uint64, sp int32) bool {
		rows = append(rows, goRow{off: uint32(pc - entry), sp: sp})
		return true
	})
	return rows
}

// find returns the row covering address a, false for none.
func (g *goFuncs) find(a uint64) (row, bool) {
	if a < g.text {
		return row{}, false
	}
	slot := &g.recent[(a>>6)%uint64(len(g.recent))]
	if r := slot.Load(); r != nil && a >= r.start && a < r.end {
		return r.find(a)
	}
	i := g.lookup(a - g.text)
	if i < 0 {
		return row{}, false
	}
	g.mu.Lock()
	f, ok := g.funcs[i]
	if !ok {
		f = &goRecent{start: g.text + g.entry(i), end: g.text + g.end(i)}
		if !g.covered(f.start) {
			f.rows = g.decode(i)
		}
		g.funcs[i] = f
	}
	g.mu.Unlock()
	if a >= f.end {
		return row{}, false
	}
	slot.Store(f)
	return f.find(a)
}

// find returns the row of f covering a, which lies in f.
func (f *goRecent) find(a uint64) (row, bool) {
	off := a - f.start
	lo, hi := 0, len(f.rows) // rows[:lo] start at or before off
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if uint64(f.rows[m].off) <= off {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo == 0 {
		return row{}, false
	}
	return f.rows[lo-1].row(f.start), true
}

// end returns the end of function i, as an offset from text.
func (g *goFuncs) end(i int) uint64 { return uint64(g.entries[i+1]) }

// A pclntab is read in pages of goLoadPageSize while a table is loaded,
// goLoadPages of them kept (512 KiB): the function table and the pcsp
// tables are read mostly in order, and 4 KiB pages made loading the Go
// compiler's table 3 times slower than one read of it.
const (
	goLoadPageSize = 64 << 10
	goLoadPages    = 8
)

// addGoRows gives t the rows of f's Go line table, read from obj, for the
// functions its CFI does not cover, decoded as they are looked up.
func (t *Table) addGoRows(f *elf.File, obj io.ReaderAt, limit uint64) {
	s, search := gopclntab.Section(f)
	if s == nil {
		return
	}
	var src *pageread.Source
	if !search && s.Flags&elf.SHF_COMPRESSED == 0 {
		// Read from the file as the pcsp tables are copied out: the
		// Go compiler's table is 8.3 MB, of which 0.6 MB is kept.
		if s.Offset > limit || s.Size > limit-s.Offset || s.Size > maxSection {
			return
		}
		src = pageread.File(obj, int64(s.Offset), s.Size, goLoadPageSize, goLoadPages)
	} else {
		data, err := sectionBytes(s, limit)
		if err != nil {
			return
		}
		if search {
			i := gopclntab.FindHeader(data, f.ByteOrder)
			if i < 0 {
				return
			}
			data = data[i:]
		}
		src = pageread.Held(data)
	}
	text, _ := bases(f)
	g := newGoFuncs(src, text)
	if g == nil {
		return
	}
	rows := t.rows
	g.covered = func(a uint64) bool { return findRow(rows, a) != nil }
	t.gofuncs, t.goBytes = g, g.size()
}
