package symcache

import (
	"iter"
	"slices"
	"sort"

	"nsprof/symbol"
)

// An entry read from the cache keeps its runs and frame lists as the
// file encodes them (lazyRanges), checked whole when read, and decodes
// a run or a list only when an address is looked up in it: libc cached
// whole has some 137 k runs, and built as []Run and [][]symbol.Frame
// they were 15 MB of a warm system-wide recording's peak of 50, though
// a recording looks up a few thousand addresses in them. An entry is
// made eager (materialize) before it is changed.

// runBlockLen is the number of runs between two starts lazyRanges keeps:
// a lookup decodes at most this many runs.
const runBlockLen = 32

// lazyRanges are the runs and frame lists of an entry in its encoded
// payload p, every offset and index in them checked when p was decoded.
type lazyRanges struct {
	p     []byte
	table []string // the payload's string table
	// listOffs are where each frame list starts in p (its count).
	listOffs []uint32
	// nruns is the number of runs; blocks the start of every
	// runBlockLen-th one.
	nruns  int
	blocks []runBlock
	// memo holds the lists decoded so far, so that a list is one
	// slice however many addresses look it up.
	memo map[uint32][]symbol.Frame
}

// runBlock is where a block of runs starts: the first run's Lo, the Hi
// of the run before it (0 for the first), which its start is encoded
// from, and its offset in the payload.
type runBlock struct {
	lo, prev uint64
	off      uint32
}

// run returns the index of the frame list of the run holding va; false
// when no run holds it.
func (z *lazyRanges) run(va uint64) (uint32, bool) {
	j := sort.Search(len(z.blocks), func(j int) bool { return z.blocks[j].lo > va }) - 1
	if j < 0 {
		return 0, false
	}
	b := z.blocks[j]
	d := newDecoder(z.p, int(b.off))
	prev := b.prev
	for range min(runBlockLen, z.nruns-j*runBlockLen) {
		lo := prev + d.uvarint()
		hi := lo + d.uvarint()
		l := d.uvarint()
		if d.err != nil || lo > va {
			return 0, false
		}
		if va < hi {
			return uint32(l), true
		}
		prev = hi
	}
	return 0, false
}

// list returns frame list i, decoded once.
func (z *lazyRanges) list(i uint32) []symbol.Frame {
	if fr, ok := z.memo[i]; ok {
		return fr
	}
	fr := z.appendList(nil, i)
	if z.memo == nil {
		z.memo = make(map[uint32][]symbol.Frame)
	}
	z.memo[i] = fr
	return fr
}

// appendList appends the frames of list i to fr.
func (z *lazyRanges) appendList(fr []symbol.Frame, i uint32) []symbol.Frame {
	off := z.listOffs[i]
	d := newDecoder(z.p, int(off))
	n := d.uvarint()
	for range n {
		fn, file, line := d.uvarint(), d.uvarint(), d.uvarint()
		if d.err != nil {
			break // checked when decoded: never
		}
		fr = append(fr, symbol.Frame{Function: z.table[fn], File: z.table[file], Line: int(line)})
	}
	return fr
}

// runs yields every run, in order.
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
		return len(e.lazy.listOffs)
	}
	return len(e.lists)
}

// allRuns yields e's runs in order.
func (e *Entry) allRuns() iter.Seq[Run] {
	if e.lazy != nil {
		return e.lazy.runs()
	}
	return func(yield func(Run) bool) {
		for _, r := range e.runs {
			if !yield(r) {
				return
			}
		}
	}
}

// allLists yields e's frame lists in order. A list yielded is good only
// until the next: those of a lazy entry are decoded into one buffer.
func (e *Entry) allLists() iter.Seq[[]symbol.Frame] {
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
		for i := range e.lazy.listOffs {
			buf = e.lazy.appendList(buf[:0], uint32(i))
			if !yield(buf) {
				return
			}
		}
	}
}

// materialize decodes the runs and frame lists of a lazy e, to be
// changed.
func (e *Entry) materialize() {
	if e.lazyFrames != nil || e.deltas != nil {
		e.Frames = e.allFrames()
		e.lazyFrames, e.deltas = nil, nil
	}
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
	if len(z.listOffs) > 0 {
		e.lists = make([][]symbol.Frame, 0, len(z.listOffs))
		for i := range z.listOffs {
			fr, ok := z.memo[uint32(i)]
			if !ok {
				fr = z.appendList(nil, uint32(i))
			}
			e.lists = append(e.lists, fr)
		}
	}
}

// allFrames returns the frames of every address of e outside its runs:
// Frames, with those of a lazy e's payload and deltas decoded into a new
// map.
func (e *Entry) allFrames() map[uint64][]symbol.Frame {
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
