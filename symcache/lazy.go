package symcache

import (
	"iter"
	"maps"
	"slices"
	"sort"

	"nsprof/symbol"
)

// An entry read from the cache keeps its runs and frame lists as the
// file encodes them (lazyRanges) and decodes a run or a list only when an
// address is looked up in it: libc cached whole has some 137 k runs, and
// built as []Run and [][]symbol.Frame they were 15 MB of a warm
// system-wide recording's peak of 50, though a recording looks up a few
// thousand addresses in them. An entry is made eager (materialize)
// before it is changed.
//
// Entries of version 4 also carry an index of their runs and lists (see
// encode), and of their addresses (see lazyframes.go), so that reading
// one checks the index only and each block of runs, lists or addresses
// is checked, whole, the first time a lookup decodes it:
// walking and checking every run and list of libpython3.11's entry (269 k
// runs) was 11-12 ms of every recording that sampled it, and made caching
// the Go compiler's functions whole (707 k runs) cost more to read back
// than resolving its addresses anew. Entries of earlier versions have no
// index: they are walked and checked whole when read, as before, the
// same index made on the way.

// runBlockLen is the number of runs between two starts lazyRanges keeps:
// a lookup decodes at most this many runs.
const runBlockLen = 32

// listBlockLen is the number of frame lists between two starts
// lazyRanges keeps: a lookup skips at most this many, less one.
const listBlockLen = 32

// Checks of a block of runs or lists (lazyRanges.runState, listState).
const (
	blockUnchecked = iota
	blockGood
	blockBad
)

// lazyRanges are the runs and frame lists of an entry in its encoded
// payload p, the offsets of its index checked when p was decoded and its
// blocks checked whole as lookups first reach them.
type lazyRanges struct {
	p     []byte
	table []string // the payload's string table
	// covered are the entry's covered spans, which every run must lie
	// in.
	covered []Span
	// nlists is the number of frame lists, listsEnd where their region
	// of p ends, and lists the start in p of every listBlockLen-th list.
	nlists   int
	listsEnd int
	lists    []uint32
	// nruns is the number of runs, runsEnd where their region of p
	// ends, and blocks the start of every runBlockLen-th run.
	nruns   int
	runsEnd int
	blocks  []blockStart
	// runState and listState say, block by block, whether the block has
	// been checked and was found good or bad; nil when every block was
	// checked as the entry was read (versions before 4).
	runState, listState []uint8
	// A block found bad: the entry's runs answer nothing since.
	badBlocks
	// memo holds the lists decoded so far, so that a list is one
	// slice however many addresses look it up.
	memo map[uint32][]symbol.Frame
}

// runBlockEnd returns where block j of runs ends in p.
func (z *lazyRanges) runBlockEnd(j int) int {
	if j+1 < len(z.blocks) {
		return int(z.blocks[j+1].off)
	}
	return z.runsEnd
}

// listBlockEnd returns where block k of lists ends in p.
func (z *lazyRanges) listBlockEnd(k int) int {
	if k+1 < len(z.lists) {
		return int(z.lists[k+1])
	}
	return z.listsEnd
}

// badBlocks says whether a block of an entry's runs, lists or addresses
// was found bad (bad), and what to call the first time one is (onBad).
type badBlocks struct {
	bad   bool
	onBad func()
}

// fail marks the blocks bad, calling onBad the first time.
func (b *badBlocks) fail() {
	if !b.bad {
		b.bad = true
		if b.onBad != nil {
			b.onBad()
		}
	}
}

// runBlockOK reports whether block j of runs is sound, checking it the
// first time.
func (z *lazyRanges) runBlockOK(j int) bool {
	if z.runState == nil {
		return true
	}
	if z.runState[j] == blockUnchecked {
		z.runState[j] = blockBad
		if z.checkRunBlock(j) {
			z.runState[j] = blockGood
		} else {
			z.fail()
		}
	}
	return z.runState[j] == blockGood
}

// checkRunBlock walks block j of runs: each run must start at or after
// the one before ends, not be empty, lie in a covered span and name a
// frame list; the block's first run must start where the index says and
// its bytes be exactly those between its start and the next's, whose
// run before must be its last. A block that passes is what walking every
// run from the first would have found there.
func (z *lazyRanges) checkRunBlock(j int) bool {
	b := z.blocks[j]
	end := z.runBlockEnd(j)
	d := decoder{b: z.p[b.off:end], end: end}
	prev := b.prev
	c := sort.Search(len(z.covered), func(i int) bool { return z.covered[i].Hi > b.at })
	for i := range min(runBlockLen, z.nruns-j*runBlockLen) {
		gap, n, l := d.uvarint(), d.uvarint(), d.uvarint()
		lo, hi := prev+gap, prev+gap+n
		if d.err != nil || lo < prev || hi <= lo || (i == 0 && lo != b.at) || l >= uint64(z.nlists) {
			return false
		}
		for c < len(z.covered) && z.covered[c].Hi <= lo {
			c++
		}
		if c == len(z.covered) || lo < z.covered[c].Lo || hi > z.covered[c].Hi {
			return false
		}
		prev = hi
	}
	return len(d.b) == 0 && (j+1 == len(z.blocks) || z.blocks[j+1].prev == prev)
}

// listBlockOK reports whether block k of lists is sound, checking it
// the first time.
func (z *lazyRanges) listBlockOK(k int) bool {
	if z.listState == nil {
		return true
	}
	if z.listState[k] == blockUnchecked {
		z.listState[k] = blockBad
		start, end := int(z.lists[k]), z.listBlockEnd(k)
		d := decoder{b: z.p[start:end], end: end}
		for range min(listBlockLen, z.nlists-k*listBlockLen) {
			d.checkList(len(z.table), k)
		}
		if d.err == nil && len(d.b) == 0 {
			z.listState[k] = blockGood
		} else {
			z.fail()
		}
	}
	return z.listState[k] == blockGood
}

// checkList reads a frame list, checking it: 1 to maxFramesPerAddr
// frames, of strings of a table of n and bounded lines. block names the
// list's block in an error.
func (d *decoder) checkList(n, block int) {
	nf := d.count(3)
	if d.err == nil && (nf == 0 || nf > maxFramesPerAddr) {
		d.fail("frame list of block %d: %d frames", block, nf)
	}
	d.skipFrames(nf, n, "frame list of block %d", uint64(block))
}

// run returns the index of the frame list of the run holding va; found
// is false when no run holds it, ok false when the block of runs that
// would hold it is bad.
func (z *lazyRanges) run(va uint64) (l uint32, found, ok bool) {
	j := sort.Search(len(z.blocks), func(j int) bool { return z.blocks[j].at > va }) - 1
	if j < 0 {
		return 0, false, true
	}
	if !z.runBlockOK(j) {
		return 0, false, false
	}
	b := z.blocks[j]
	d := newDecoder(z.p, int(b.off))
	prev := b.prev
	for range min(runBlockLen, z.nruns-j*runBlockLen) {
		lo := prev + d.uvarint()
		hi := lo + d.uvarint()
		l := d.uvarint()
		if d.err != nil || lo > va {
			return 0, false, true
		}
		if va < hi {
			return uint32(l), true, true
		}
		prev = hi
	}
	return 0, false, true
}

// list returns frame list i, decoded once; ok is false when its block
// is bad.
func (z *lazyRanges) list(i uint32) (fr []symbol.Frame, ok bool) {
	if fr, ok := z.memo[i]; ok {
		return fr, true
	}
	if !z.listBlockOK(int(i / listBlockLen)) {
		return nil, false
	}
	fr = z.appendList(nil, i)
	if z.memo == nil {
		z.memo = make(map[uint32][]symbol.Frame)
	}
	z.memo[i] = fr
	return fr, true
}

// appendList appends the frames of list i, of a block checked, to fr.
func (z *lazyRanges) appendList(fr []symbol.Frame, i uint32) []symbol.Frame {
	d := newDecoder(z.p, int(z.lists[i/listBlockLen]))
	for range i % listBlockLen {
		for range 3 * d.uvarint() {
			d.uvarint()
		}
	}
	n := d.uvarint()
	for range n {
		fn, file, line := d.uvarint(), d.uvarint(), d.uvarint()
		if d.err != nil {
			break // checked: never
		}
		fr = append(fr, symbol.Frame{Function: z.table[fn], File: z.table[file], Line: int(line)})
	}
	return fr
}

// checkAll checks every block of z not checked yet and reports whether
// all are sound.
func (z *lazyRanges) checkAll() bool {
	for j := range z.blocks {
		if !z.runBlockOK(j) {
			return false
		}
	}
	for k := range z.lists {
		if !z.listBlockOK(k) {
			return false
		}
	}
	return !z.bad
}

// runs yields every run, in order, of a z whose blocks are all sound.
func (z *lazyRanges) runs() iter.Seq[Run] {
	return func(yield func(Run) bool) {
		if len(z.blocks) == 0 {
			return
		}
		b := z.blocks[0]
		d := newDecoder(z.p, int(b.off))
		prev := b.prev
		for range z.nruns {
			lo := prev + d.uvarint()
			hi := lo + d.uvarint()
			l := d.uvarint()
			if d.err != nil || !yield(Run{Lo: lo, Hi: hi, Frames: uint32(l)}) {
				return
			}
			prev = hi
		}
	}
}

// settle checks the runs and lists of a lazy e whole, before they are
// all read, and drops them, with the spans they cover, when a block is
// bad: an entry is never written back, or decoded whole, with runs no
// check has passed.
func (e *Entry) settle() {
	if e.lazy == nil || e.lazy.checkAll() {
		return
	}
	e.lazy, e.runs, e.lists, e.Covered = nil, nil, nil, nil
}

// NumRuns returns the number of runs of e.
func (e *Entry) NumRuns() int {
	if e.lazy != nil {
		return e.lazy.nruns
	}
	return len(e.runs)
}

// NumFrameLists returns the number of frame lists of e.
func (e *Entry) NumFrameLists() int {
	if e.lazy != nil {
		return e.lazy.nlists
	}
	return len(e.lists)
}

// allRuns yields e's runs in order, those of a lazy e settled first.
func (e *Entry) allRuns() iter.Seq[Run] {
	e.settle()
	if e.lazy != nil {
		return e.lazy.runs()
	}
	return slices.Values(e.runs)
}

// allLists yields e's frame lists in order, those of a lazy e settled
// first. A list yielded is good only until the next: those of a lazy
// entry are decoded into one buffer.
func (e *Entry) allLists() iter.Seq[[]symbol.Frame] {
	e.settle()
	return func(yield func([]symbol.Frame) bool) {
		if e.lazy == nil {
			for _, fr := range e.lists {
				if !yield(fr) {
					return
				}
			}
			return
		}
		var buf []symbol.Frame
		for i := range e.lazy.nlists {
			buf = e.lazy.appendList(buf[:0], uint32(i))
			if !yield(buf) {
				return
			}
		}
	}
}

// materialize decodes the runs and frame lists of a lazy e, to be
// changed; those of a bad block are dropped (see settle). Nothing of e
// lies in its file since: a mapped one is unmapped.
func (e *Entry) materialize() {
	defer e.unmap()
	if e.lazyFrames != nil || e.deltas != nil {
		e.Frames = e.allFrames()
		e.lazyFrames, e.deltas = nil, nil
	}
	e.settle()
	z := e.lazy
	if z == nil {
		return
	}
	e.lazy = nil
	if z.nruns > 0 {
		e.runs = make([]Run, 0, z.nruns)
		for r := range z.runs() {
			e.runs = append(e.runs, r)
		}
	}
	if z.nlists > 0 {
		e.lists = make([][]symbol.Frame, 0, z.nlists)
		for i := range z.nlists {
			fr, ok := z.memo[uint32(i)]
			if !ok {
				fr = z.appendList(nil, uint32(i))
			}
			e.lists = append(e.lists, fr)
		}
	}
}

// addrFrames is an address and its frames.
type addrFrames struct {
	va uint64
	fr []symbol.Frame
}

// sortedOf returns the addresses of frames and their frames, in order.
func sortedOf(frames map[uint64][]symbol.Frame) []addrFrames {
	out := make([]addrFrames, 0, len(frames))
	for _, va := range slices.Sorted(maps.Keys(frames)) {
		out = append(out, addrFrames{va, frames[va]})
	}
	return out
}

// allFrames returns the frames of every address of e outside its runs:
// Frames, with those of a lazy e's payload and deltas decoded into a new
// map. The addresses of a lazy e's payload are checked whole first, and
// dropped when a block of them is bad.
func (e *Entry) allFrames() map[uint64][]symbol.Frame {
	if e.lazyFrames != nil && !e.lazyFrames.checkAll() {
		// A block found bad: none of them is kept (see settle).
		e.lazyFrames = nil
	}
	if e.lazyFrames == nil && e.deltas == nil {
		return e.Frames
	}
	all := make(map[uint64][]symbol.Frame, e.NumAddrs())
	add := func(va uint64, fr []symbol.Frame) { all[va] = fr }
	if e.lazyFrames != nil {
		e.lazyFrames.all(add)
	}
	if e.deltas != nil {
		// The last delta first: an address of an earlier one keeps
		// its frames.
		for _, z := range slices.Backward(e.deltas.zs) {
			z.all(add)
		}
	}
	for va, fr := range e.Frames {
		all[va] = fr
	}
	return all
}
