package symcache

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"slices"
	"sort"
	"sync"

	"nsprof/symbol"
)

// Entry is what the cache holds for one object. Its runs of frames are
// added by AddFunctions and looked up by FramesAt; an entry Get returns
// decodes them as lookups need them.
type Entry struct {
	// Source says where the symbols came from ([symbol.Symbols.Source]).
	Source string
	// NoLines says the symbols had no source lines at all
	// ([symbol.Symbols.HasLines]): every address has no frames.
	NoLines bool
	// LoadedAt is when the object's own files were last read, in Unix
	// seconds.
	LoadedAt int64
	// Symbols is the object's symbol table, sorted by address, no two at
	// one address, each of non-zero size (as [symbol.Table.All] gives it).
	Symbols []symbol.Symbol
	// Frames are the source frames of the link-time addresses resolved
	// so far, innermost first; an address without any maps to an empty
	// slice, so that it is not resolved again.
	Frames map[uint64][]symbol.Frame
	// Covered are ranges of link-time addresses (whole functions) whose
	// frames the entry's runs give all of: an address in one of them and
	// in no run has none. Sorted, disjoint, none empty.
	Covered []Span

	// runs are runs of addresses within Covered with the same frames
	// ([symbol.Symbols.FrameRanges]), each naming one of lists, the
	// frames runs give, which runs share. Runs are sorted, disjoint and
	// not empty; lists are not empty. An entry read from the cache holds
	// them in lazy instead, undecoded, until it is changed.
	runs  []Run
	lists [][]symbol.Frame
	lazy  *lazyRanges
	// lazyFrames are the addresses of an entry read from the cache
	// and their frames, undecoded (see lazyframes.go); Frames holds
	// those added since.
	lazyFrames *lazyFrames
	// deltas are the addresses of the deltas after the payload of an
	// entry read, and their frames, undecoded (see deltaAddrs).
	deltas *deltaAddrs

	// file is what the entry was read from or written as, for
	// Cache.AddFrames.
	file fileRef
	// mapped is the file the lazy parts of an entry Get returned lie
	// in, until Close; nil for others.
	mapped *entryFile
}

// Span is a range of addresses, [Lo, Hi).
type Span struct{ Lo, Hi uint64 }

// Run is a run of addresses, [Lo, Hi), with the frames of the entry's
// frame list of index Frames.
type Run struct {
	Lo, Hi uint64
	Frames uint32
}

// FramesAt returns the frames e knows of the link-time address va: from
// Frames (or the addresses of an entry read and of its deltas, decoded
// as they are looked up), else from the run holding it (none when va is in a span of
// Covered outside every run). ok is false when e does not know. The
// frames of one run's list are one slice, whatever address of the run
// asked; they are not to be changed. FramesAt is not safe to call
// concurrently on one entry (it decodes the lists it is asked for).
func (e *Entry) FramesAt(va uint64) (fr []symbol.Frame, ok bool) {
	if fr, ok := e.Frames[va]; ok {
		return fr, true
	}
	if e.mapped != nil {
		e.mapped.looked()
	}
	if fr, ok := e.deltas.frames(va); ok {
		return fr, true
	}
	if e.lazyFrames != nil {
		if fr, ok := e.lazyFrames.frames(va); ok {
			return fr, true
		}
	}
	if !e.IsCovered(va, va+1) {
		return nil, false
	}
	if z := e.lazy; z != nil {
		if z.bad {
			return nil, false // a block was found bad: see settle
		}
		l, found, ok := z.run(va)
		if !found {
			return nil, ok
		}
		return z.list(l)
	}
	j := sort.Search(len(e.runs), func(j int) bool { return e.runs[j].Hi > va })
	if j < len(e.runs) && e.runs[j].Lo <= va {
		return e.lists[e.runs[j].Frames], true
	}
	return nil, true
}

// IsCovered reports whether the whole of [lo, hi) is in one span of
// Covered.
func (e *Entry) IsCovered(lo, hi uint64) bool {
	i := sort.Search(len(e.Covered), func(i int) bool { return e.Covered[i].Hi > lo })
	return i < len(e.Covered) && e.Covered[i].Lo <= lo && hi <= e.Covered[i].Hi
}

// AddFunctions adds to e the frames of whole functions: the spans and
// the runs of frames in them ([symbol.Symbols.FrameRanges]), in any
// order. A span that overlaps Covered or another span is left out, with
// its runs, as is a run in no span left. The frame lists of the runs
// added are shared where equal, and the addresses of Frames the spans
// cover are dropped from it.
func (e *Entry) AddFunctions(spans []Span, runs []symbol.FrameRange) {
	if len(spans) == 0 {
		return
	}
	e.materialize()
	spans = slices.SortedFunc(slices.Values(spans), func(a, b Span) int { return cmp.Compare(a.Lo, b.Lo) })
	kept := spans[:0]
	for _, sp := range spans {
		if sp.Hi <= sp.Lo || (len(kept) > 0 && kept[len(kept)-1].Hi > sp.Lo) || overlapsAny(e.Covered, sp) {
			continue
		}
		kept = append(kept, sp)
	}
	lists := make(map[string]uint32)
	var key []byte
	add := make([]Run, 0, len(runs))
	for _, r := range runs {
		if r.Hi <= r.Lo || len(r.Frames) == 0 {
			continue
		}
		key = key[:0]
		for _, f := range r.Frames {
			key = append(append(append(key, f.Function...), 0), f.File...)
			key = binary.AppendUvarint(append(key, 0), uint64(f.Line))
		}
		i, ok := lists[string(key)]
		if !ok {
			i = uint32(len(e.lists))
			lists[string(key)] = i
			e.lists = append(e.lists, r.Frames)
		}
		add = append(add, Run{Lo: r.Lo, Hi: r.Hi, Frames: i})
	}
	slices.SortFunc(add, func(a, b Run) int { return cmp.Compare(a.Lo, b.Lo) })
	in := add[:0]
	k := 0
	for _, r := range add {
		for k < len(kept) && kept[k].Hi <= r.Lo {
			k++
		}
		if k < len(kept) && kept[k].Lo <= r.Lo && r.Hi <= kept[k].Hi && (len(in) == 0 || in[len(in)-1].Hi <= r.Lo) {
			in = append(in, r)
		}
	}
	e.Covered = mergeSorted(e.Covered, kept, func(s Span) uint64 { return s.Lo })
	e.runs = mergeSorted(e.runs, in, func(r Run) uint64 { return r.Lo })
	for va := range e.Frames {
		if e.IsCovered(va, va+1) {
			delete(e.Frames, va)
		}
	}
}

// overlapsAny reports whether sp overlaps a span of sorted spans.
func overlapsAny(spans []Span, sp Span) bool {
	i := sort.Search(len(spans), func(i int) bool { return spans[i].Hi > sp.Lo })
	return i < len(spans) && spans[i].Lo < sp.Hi
}

// mergeSorted merges a and b, each sorted by key, into a new slice.
func mergeSorted[T any](a, b []T, key func(T) uint64) []T {
	out := make([]T, 0, len(a)+len(b))
	for len(a) > 0 && len(b) > 0 {
		if key(b[0]) < key(a[0]) {
			out, b = append(out, b[0]), b[1:]
		} else {
			out, a = append(out, a[0]), a[1:]
		}
	}
	return append(append(out, a...), b...)
}

// magic starts every entry file; version is the format's. Version 1,
// without Covered and Ranges, version 2, without deltas after the
// payload (see delta.go), and version 3, without the index of its
// addresses, runs and lists (see lazy.go), are still read.
const (
	magic   = "nsprofSC"
	version = 4
)

// flagNoLines marks an Entry.NoLines.
const flagNoLines = 1

// headerSize is magic, version (u32), payload length (u64), CRC-32C (u32).
const headerSize = len(magic) + 4 + 8 + 4

// Limits on what an entry may make a reader hold.
const (
	// MaxEntrySize bounds an entry file.
	MaxEntrySize = 256 << 20
	// maxFramesPerAddr bounds the inline depth at one address.
	maxFramesPerAddr = 1024
	// maxLine bounds a line number.
	maxLine = 1<<31 - 1
)

// castagnoli is the CRC-32C table, made when first used: making it at
// start-up cost every nsprof command, most of which never read the cache.
var castagnoli = sync.OnceValue(func() *crc32.Table { return crc32.MakeTable(crc32.Castagnoli) })

// ErrCorrupt is wrapped by the errors of entries that cannot be decoded.
var ErrCorrupt = errors.New("corrupt symbol cache entry")

// encode returns the file contents of e for the object of build-id key.
func encode(key string, e *Entry) []byte {
	return encodeAs(key, e, version, (*stringTable).appendEntryAddrs, appendIndexed)
}

// encodeAs returns the file contents of e for the object of build-id key
// as version v, the frames of its addresses appended by addrs, its frame
// lists and runs by ranges.
func encodeAs(key string, e *Entry, v uint32, addrs func(t *stringTable, b []byte, e *Entry) []byte, ranges func(body []byte, strs *stringTable, e *Entry) []byte) []byte {
	e.settle()
	var strs stringTable
	var body []byte
	var prev uint64
	body = binary.AppendUvarint(body, uint64(len(e.Symbols)))
	for i, s := range e.Symbols {
		d := s.Addr - prev
		if i == 0 {
			d = s.Addr
		}
		prev = s.Addr
		body = binary.AppendUvarint(body, d)
		body = binary.AppendUvarint(body, s.Size)
		body = appendString(body, s.Name) // names are seldom repeated
	}
	body = addrs(&strs, body, e)
	// Covered (each start as the distance from the end of the one
	// before, then its length), then the frame lists and the runs.
	body = binary.AppendUvarint(body, uint64(len(e.Covered)))
	prev = 0
	for _, c := range e.Covered {
		body = binary.AppendUvarint(body, c.Lo-prev)
		body = binary.AppendUvarint(body, c.Hi-c.Lo)
		prev = c.Hi
	}
	body = ranges(body, &strs, e)
	var head []byte
	head = appendString(head, key)
	head = appendString(head, e.Source)
	flags := uint64(0)
	if e.NoLines {
		flags |= flagNoLines
	}
	head = binary.AppendUvarint(head, flags)
	head = binary.AppendUvarint(head, uint64(e.LoadedAt))
	head = strs.appendTable(head)

	// The payload is head then body, put after the header in one copy.
	n := len(head) + len(body)
	sum := crc32.Update(crc32.Checksum(head, castagnoli()), castagnoli(), body)
	out := make([]byte, 0, headerSize+n)
	out = append(out, magic...)
	out = binary.LittleEndian.AppendUint32(out, v)
	out = binary.LittleEndian.AppendUint64(out, uint64(n))
	out = binary.LittleEndian.AppendUint32(out, sum)
	return append(append(out, head...), body...)
}

// stringTable numbers the strings of an encoding (function and file
// names), each kept once.
type stringTable struct {
	index map[string]uint64
	strs  []string
}

func (t *stringTable) intern(s string) uint64 {
	i, ok := t.index[s]
	if !ok {
		if t.index == nil {
			t.index = make(map[string]uint64)
		}
		i = uint64(len(t.strs))
		t.index[s] = i
		t.strs = append(t.strs, s)
	}
	return i
}

// appendFrames appends a list of frames: their count, then each one's
// function, file (indexes of the string table) and line.
func (t *stringTable) appendFrames(b []byte, fr []symbol.Frame) []byte {
	b = binary.AppendUvarint(b, uint64(len(fr)))
	for _, f := range fr {
		b = binary.AppendUvarint(b, t.intern(f.Function))
		b = binary.AppendUvarint(b, t.intern(f.File))
		b = binary.AppendUvarint(b, uint64(f.Line))
	}
	return b
}

// appendAddrFrames appends the frames of addresses: their count, then
// for each address in order its distance from the one before and its
// frames.
func (t *stringTable) appendAddrFrames(b []byte, frames []addrFrames) []byte {
	b = binary.AppendUvarint(b, uint64(len(frames)))
	prev := uint64(0)
	for _, a := range frames {
		b = binary.AppendUvarint(b, a.va-prev)
		prev = a.va
		b = t.appendFrames(b, a.fr)
	}
	return b
}

// appendTable appends the strings: their count, then each one.
func (t *stringTable) appendTable(b []byte) []byte {
	b = binary.AppendUvarint(b, uint64(len(t.strs)))
	for _, s := range t.strs {
		b = appendString(b, s)
	}
	return b
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// decode parses the file contents b of the entry of build-id key. Every
// count and length is checked against what is left of b, so that a hostile
// entry costs no more memory than its size. A delta after the payload
// that cannot be used (see decodeDeltas) is returned as an error with the
// entry, without it and the deltas after it; any other error with none.
func decode(key string, b []byte) (*Entry, error) { return decodeFile(key, b, nil) }

// decodeFile is decode of b mapped when drop is set: the parts of b it
// checksums are handed to drop once read (see checksum).
func decodeFile(key string, b []byte, drop func([]byte)) (*Entry, error) {
	if len(b) < headerSize || string(b[:len(magic)]) != magic {
		return nil, fmt.Errorf("%w: no header", ErrCorrupt)
	}
	if len(b) > MaxEntrySize {
		// Offsets into the payload are kept in 32 bits (lazyRanges).
		return nil, fmt.Errorf("%w: %d bytes, more than %d", ErrCorrupt, len(b), MaxEntrySize)
	}
	h := b[len(magic):]
	v := binary.LittleEndian.Uint32(h)
	if v < 1 || v > version {
		return nil, fmt.Errorf("%w: version %d, want %d", ErrCorrupt, v, version)
	}
	n := binary.LittleEndian.Uint64(h[4:])
	sum := binary.LittleEndian.Uint32(h[12:])
	p := b[headerSize:]
	if n > uint64(len(p)) || (v < 3 && n != uint64(len(p))) {
		return nil, fmt.Errorf("%w: payload of %d bytes, header says %d", ErrCorrupt, len(p), n)
	}
	p = p[:n]
	if checksum(b, headerSize, headerSize+int(n), drop) != sum {
		return nil, fmt.Errorf("%w: checksum mismatch", ErrCorrupt)
	}
	d := newDecoder(p, 0)
	if id := d.str(); d.err == nil && id != key {
		return nil, fmt.Errorf("%w: entry of build-id %q under %q", ErrCorrupt, id, key)
	}
	e := &Entry{Source: d.str()}
	flags := d.uvarint()
	if flags&^flagNoLines != 0 {
		d.fail("unknown flags %#x", flags)
	}
	e.NoLines = flags&flagNoLines != 0
	e.LoadedAt = int64(d.uvarint())
	table := d.table()
	nsym := d.count(3) // address, size, name length
	e.Symbols = make([]symbol.Symbol, 0, nsym)
	// The names are cut from one copy of the symbols' bytes, as a
	// table's strings are (see table).
	from := d.b
	names := make([]strSpan, 0, nsym)
	var addr uint64
	for i := range nsym {
		delta := d.uvarint()
		if i > 0 && delta == 0 {
			d.fail("symbol %d at the address of the one before", i)
		}
		if addr+delta < addr {
			d.fail("symbol %d: address overflows", i)
		}
		addr += delta
		s := symbol.Symbol{Addr: addr, Size: d.uvarint()}
		names = append(names, d.strSpan(from))
		if d.err == nil && s.Size == 0 {
			d.fail("symbol %d: size 0", i)
		}
		if d.err != nil {
			return nil, d.err
		}
		e.Symbols = append(e.Symbols, s)
	}
	all := string(from[:len(from)-len(d.b)])
	for i, sp := range names {
		e.Symbols[i].Name = all[sp.off : sp.off+sp.n]
	}
	var z *lazyFrames
	if v >= 4 {
		z = decodeIndexedAddrs(&d, p, table)
	} else {
		z = checkAddrFrames(&d, p, table, false)
	}
	if d.err != nil {
		return nil, d.err
	} else if z != nil && z.n > 0 {
		e.lazyFrames = z
	}
	e.Frames = make(map[uint64][]symbol.Frame)
	switch {
	case v >= 4:
		decodeIndexed(&d, e, p, table)
	case v >= 2:
		decodeRanges(&d, e, p, table)
	}
	if d.err == nil && len(d.b) != 0 {
		d.fail("%d bytes after the last range", len(d.b))
	}
	if d.err != nil {
		return nil, d.err
	}
	if v >= 3 {
		e.file = fileRef{payload: n, sum: sum}
		if err := decodeDeltas(e, b, headerSize+int(n), drop); err != nil {
			e.file.bad = true
			return e, err
		}
	}
	return e, nil
}

// table reads a string table: its count, then each string. The strings
// are cut from one copy of the table's bytes: a string allocated each
// was a third of reading the Go compiler's entry (its 20 k symbols, and
// the tables of its deltas).
func (d *decoder) table() []string {
	n := d.count(1)
	from := d.b
	spans := make([]strSpan, n)
	for i := range spans {
		spans[i] = d.strSpan(from)
	}
	if d.err != nil {
		return nil
	}
	all := string(from[:len(from)-len(d.b)])
	table := make([]string, n)
	for i, sp := range spans {
		table[i] = all[sp.off : sp.off+sp.n]
	}
	return table
}

// strSpan is where a string lies in what a decoder read, from where the
// caller began (see decoder.strSpan).
type strSpan struct{ off, n int }

// strSpan reads a string as str does, and returns where its bytes are
// in from, which d's bytes are the end of.
func (d *decoder) strSpan(from []byte) strSpan {
	n := d.uvarint()
	if d.err == nil && n > uint64(len(d.b)) {
		d.fail("string of %d bytes in %d", n, len(d.b))
	}
	if d.err != nil {
		return strSpan{}
	}
	sp := strSpan{off: len(from) - len(d.b), n: int(n)}
	d.b = d.b[n:]
	return sp
}

// decoder reads varints and strings from b; the first error sticks.
type decoder struct {
	b []byte
	// end is the offset of b's end in what it is read from (the
	// offset of what is read next is end - len(b)).
	end int
	err error
}

// newDecoder returns a decoder of p from byte off.
func newDecoder(p []byte, off int) decoder { return decoder{b: p[off:], end: len(p)} }

// offset returns the offset of what d reads next.
func (d *decoder) offset() int { return d.end - len(d.b) }

// nextAddr reads the i-th address of a list of addresses with frames (its
// delta from the one before, va) and its number of frames, checked.
func (d *decoder) nextAddr(i int, va uint64) (uint64, int) {
	delta := d.uvarint()
	if i > 0 && delta == 0 {
		d.fail("address %d repeats the one before", i)
	}
	if va+delta < va {
		d.fail("address %d overflows", i)
	}
	va += delta
	nf := d.count(3)
	if nf > maxFramesPerAddr {
		d.fail("address %#x: %d frames", va, nf)
	}
	return va, nf
}

// skipFrames reads nf frames (function and file string indexes, line)
// without keeping them, checking the strings are of a table of n and the
// lines bounded; what (a format of one argument) and at name the frames
// in an error.
func (d *decoder) skipFrames(nf, n int, what string, at uint64) {
	// On a slice of its own, binary.Uvarint inlined: every frame of an
	// entry read is checked so, and a method call per field was most of
	// reading one.
	b := d.b
	left := nf
	for ; left > 0; left-- {
		fn, k1 := binary.Uvarint(b)
		if k1 <= 0 {
			break
		}
		file, k2 := binary.Uvarint(b[k1:])
		if k2 <= 0 {
			break
		}
		line, k3 := binary.Uvarint(b[k1+k2:])
		if k3 <= 0 {
			break
		}
		if fn >= uint64(n) || file >= uint64(n) {
			d.b = b
			d.fail(what+": strings %d, %d of %d", at, fn, file, n)
			return
		}
		if line > maxLine {
			d.b = b
			d.fail(what+": line %d", at, line)
			return
		}
		b = b[k1+k2+k3:]
	}
	d.b = b
	if left > 0 {
		// A bad varint: read again as uvarint reads it, for its error.
		for range 3 {
			d.uvarint()
		}
	}
}

// skipVarints reads n varints without decoding them: each ends at a
// byte below 0x80. It is for bytes checked before (a block checkBlock
// found sound); running out of bytes fails all the same.
func (d *decoder) skipVarints(n int) {
	if n <= 0 {
		return
	}
	b := d.b
	for i, c := range b {
		if c < 0x80 {
			if n--; n == 0 {
				d.b = b[i+1:]
				return
			}
		}
	}
	if n > 0 {
		d.fail("bad varint")
	}
}

// fail sets the error, if none is set, and empties b: every read after it
// gives zero values.
func (d *decoder) fail(format string, args ...any) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: at byte %d: %s", ErrCorrupt, d.offset(), fmt.Sprintf(format, args...))
	}
	d.b = nil
}

func (d *decoder) uvarint() uint64 {
	if len(d.b) > 0 && d.b[0] < 0x80 {
		// Most are one byte (gaps, lengths, lines, small indexes),
		// read here, inlined: the call was a quarter of the reading
		// of an entry. An error emptied b (fail).
		v := uint64(d.b[0])
		d.b = d.b[1:]
		return v
	}
	return d.uvarintSlow()
}

// uvarintSlow is uvarint for a varint of more than one byte, an error or
// the end of b.
func (d *decoder) uvarintSlow() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail("bad varint")
		return 0
	}
	d.b = d.b[n:]
	return v
}

// count reads a number of items of at least size bytes each, bounded by
// the bytes left.
func (d *decoder) count(size int) int {
	n := d.uvarint()
	if d.err == nil && n > uint64(len(d.b)/size) {
		d.fail("%d items in %d bytes", n, len(d.b))
	}
	if d.err != nil {
		return 0
	}
	return int(n)
}

func (d *decoder) str() string {
	n := d.uvarint()
	if d.err == nil && n > uint64(len(d.b)) {
		d.fail("string of %d bytes in %d", n, len(d.b))
	}
	if d.err != nil {
		return ""
	}
	s := string(d.b[:n])
	d.b = d.b[n:]
	return s
}
