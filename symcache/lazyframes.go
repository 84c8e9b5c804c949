package symcache

import (
	"slices"
	"sort"

	"nsprof/symbol"
)

// An entry read from the cache keeps the frames of the addresses of its
// payload as the file encodes them (lazyFrames) and decodes an address's
// only when it is looked up: the Go compiler's entry over a compile loop
// holds tens of thousands of addresses, up to maxCachedAddrs, of which a
// recording looks up a part, and made into a map of frame slices as it
// was read they were most of what reading the entry cost (7 % of a warm
// recording's CPU). An entry of version 4 indexes them, addrBlockLen to a
// block, each block checked the first time a lookup reaches it (see
// lazy.go); those of earlier versions, and of deltas, are checked whole
// as they are read, the same blocks made on the way. Addresses added
// since, from deltas or by AddFrames, are in Entry.Frames.

// addrBlockLen is the number of addresses between two starts lazyFrames
// keeps (and an entry of version 4 indexes): a lookup decodes at most
// this many.
const addrBlockLen = 8

// lazyFrames are the addresses of an entry and their frames in its
// encoded payload p, every field checked when p was decoded or, in an
// entry of version 4, when a lookup first reaches its block.
type lazyFrames struct {
	p     []byte
	table []string
	n     int
	// blocks hold the start of every addrBlockLen-th address.
	blocks []blockStart
	// vas are the addresses, for a delta's until it is indexed
	// (indexDeltas); nil otherwise.
	vas []uint64
	// arena holds the frames decoded so far, handed out in slices of
	// it: one allocation per address looked up was most of a lookup.
	arena frameArena
	// end is where the addresses' region of p ends; state says, block
	// by block, whether the block has been checked and was found good
	// or bad: nil when every block was checked as the entry was read
	// (versions before 4, and deltas). A block found bad: z answers
	// nothing since.
	end   int
	state []uint8
	badBlocks
	// last is the block the last lookup found, where the next starts
	// looking (see block).
	last int
}

// frameArena hands out frame slices from chunks, each slice's capacity
// its length so that an append to it copies.
type frameArena struct {
	buf []symbol.Frame
	// chunk is the size of the last chunk made: chunks grow from
	// firstArenaChunk to arenaChunk.
	chunk int
}

// arenaChunk is the number of frames the largest chunk holds (160 kB);
// firstArenaChunk the first's. An entry has an arena for its payload
// and one for each delta, and a recording looks up a few addresses in
// most of them: with every chunk of arenaChunk frames, the Go compiler's
// and the go command's 54 deltas held some 5 MB of frames mostly unused,
// a fifth of a compile loop's recording's heap as its bundle peaked.
const (
	arenaChunk      = 4096
	firstArenaChunk = 64
)

// alloc returns an empty slice with room for n frames.
func (a *frameArena) alloc(n int) []symbol.Frame {
	if n == 0 {
		return []symbol.Frame{} // not nil: an address known to have none
	}
	if n > arenaChunk/8 {
		return make([]symbol.Frame, 0, n)
	}
	if cap(a.buf)-len(a.buf) < n {
		a.chunk = min(max(2*a.chunk, firstArenaChunk, n), arenaChunk)
		a.buf = make([]symbol.Frame, 0, a.chunk)
	}
	fr := a.buf[len(a.buf) : len(a.buf) : len(a.buf)+n]
	a.buf = a.buf[:len(a.buf)+n]
	return fr
}

// checkAddrFrames reads the frames of addresses as appendAddrFrames
// writes them from d, a decoder of the payload p, checking every field,
// and returns them undecoded, with z.vas holding the addresses when
// keepAddrs is set.
func checkAddrFrames(d *decoder, p []byte, table []string, keepAddrs bool) *lazyFrames {
	z := &lazyFrames{p: p, table: table}
	nva := d.count(2)
	if nva > 0 {
		z.blocks = make([]blockStart, 0, (nva+addrBlockLen-1)/addrBlockLen)
		if keepAddrs {
			z.vas = make([]uint64, 0, nva)
		}
	}
	var va uint64
	for i := range nva {
		off := d.offset()
		prev := va
		var nf int
		va, nf = d.nextAddr(i, va)
		d.skipFrames(nf, len(table), "address %#x", va)
		if d.err != nil {
			return nil
		}
		if i%addrBlockLen == 0 {
			z.blocks = append(z.blocks, blockStart{at: va, prev: prev, off: uint32(off)})
		}
		if keepAddrs {
			z.vas = append(z.vas, va)
		}
	}
	z.n = nva
	z.end = d.offset()
	return z
}

// decodeIndexedAddrs reads the addresses with frames of an entry of
// version 4 (appendEntryAddrs) from d, a decoder of the payload
// p, and returns them undecoded, their index checked (starts in the
// region, in order, addresses increasing): each block is checked whole
// the first time a lookup reaches it. Nil when there are none.
func decodeIndexedAddrs(d *decoder, p []byte, table []string) *lazyFrames {
	n, at, index := d.region("addresses", 2, addrBlockLen, blockIndexSize) // delta, frames
	if d.err != nil || n == 0 {
		return nil
	}
	z := &lazyFrames{p: p, table: table, n: n, end: d.offset() - len(index)}
	if z.blocks = d.blockIndex("address", index, at, z.end); d.err != nil {
		return nil
	}
	z.state = make([]uint8, len(z.blocks))
	return z
}

// blockOK reports whether block j of z is sound, checking it the first
// time (see checkBlock).
func (z *lazyFrames) blockOK(j int) bool {
	if z.state == nil {
		return true
	}
	if z.state[j] == blockUnchecked {
		z.checkBlock(j, 0, false)
	}
	return z.state[j] == blockGood
}

// checkBlock checks block j of z, not checked before, and records what
// it found: as checkAddrFrames checks every address, its first the one
// the index says, its bytes exactly those up to the next block's, whose
// address before must be its last. With want set it also finds address
// va on the way: where its frames start in z.p and how many there are.
// A lookup reaching a block not checked yet so reads it once, not twice.
func (z *lazyFrames) checkBlock(j int, va uint64, want bool) (off, nf int, found bool) {
	z.state[j] = blockBad
	b := z.blocks[j]
	end := z.end
	if j+1 < len(z.blocks) {
		end = int(z.blocks[j+1].off)
	}
	d := decoder{b: z.p[b.off:end], end: end}
	at := b.prev
	for i := range min(addrBlockLen, z.n-j*addrBlockLen) {
		var n int
		at, n = d.nextAddr(j*addrBlockLen+i, at)
		if d.err == nil && i == 0 && at != b.at {
			d.fail("address block %d starts at %#x, not %#x", j, at, b.at)
		}
		if want && at == va && d.err == nil {
			off, nf, found = d.offset(), n, true
		}
		d.skipFrames(n, len(z.table), "address %#x", at)
	}
	if d.err == nil && len(d.b) == 0 && (j+1 == len(z.blocks) || z.blocks[j+1].prev == at) {
		z.state[j] = blockGood
		return off, nf, found
	}
	z.fail()
	return 0, 0, false
}

// find finds address va in block j of z, a sound block: where its
// frames start in z.p and how many there are.
func (z *lazyFrames) find(j int, va uint64) (off, nf int, found bool) {
	b := z.blocks[j]
	d := newDecoder(z.p, int(b.off))
	at := b.prev
	for range min(addrBlockLen, z.n-j*addrBlockLen) {
		at += d.uvarint()
		n := int(d.uvarint())
		if d.err != nil || at > va {
			return 0, 0, false
		}
		if at == va {
			return d.offset(), n, true
		}
		d.skipVarints(3 * n)
	}
	return 0, 0, false
}

// checkAll checks every block of z not checked yet and reports whether
// all are sound.
func (z *lazyFrames) checkAll() bool {
	for j := range z.blocks {
		if !z.blockOK(j) {
			return false
		}
	}
	return !z.bad
}

// frames returns the frames of va; ok is false when z does not hold it.
func (z *lazyFrames) frames(va uint64) (fr []symbol.Frame, ok bool) {
	j := z.block(va)
	if j < 0 || z.bad {
		return nil, false
	}
	var off, nf int
	var found bool
	switch {
	case z.state == nil || z.state[j] == blockGood:
		off, nf, found = z.find(j, va)
	case z.state[j] == blockUnchecked:
		off, nf, found = z.checkBlock(j, va, true)
	}
	if !found {
		return nil, false
	}
	d := newDecoder(z.p, off)
	fr = z.arena.alloc(nf)
	for range nf {
		fn, file, line := d.uvarint(), d.uvarint(), d.uvarint()
		fr = append(fr, symbol.Frame{Function: z.table[fn], File: z.table[file], Line: int(line)})
	}
	return fr, d.err == nil
}

// block returns the index of the last block of z starting at or below
// va, -1 for none. The bundle looks addresses up in increasing order, a
// few blocks apart: from the block found last, the search gallops
// forward, where a binary search over all the blocks (the Go
// compiler's entry has some 15 k) missed the caches at most of its
// steps, for each address.
func (z *lazyFrames) block(va uint64) int {
	bs := z.blocks
	lo, hi := 0, len(bs)
	if i := z.last; i < len(bs) && bs[i].at <= va {
		lo, hi = gallop(len(bs), i, func(k int) bool { return bs[k].at > va })
	}
	j := lo + sort.Search(hi-lo, func(k int) bool { return bs[lo+k].at > va }) - 1
	if j >= 0 {
		z.last = j
	}
	return j
}

// gallop narrows the search for the first index k of n at which above(k)
// holds, knowing above(i) does not: it steps forward from i by doubling
// strides and returns the range [lo, hi) in which to search that
// index (hi is n when no stride reached an index where above holds).
func gallop(n, i int, above func(k int) bool) (lo, hi int) {
	lo, step := i+1, 1
	for {
		k := i + step
		if k >= n {
			return lo, n
		}
		if above(k) {
			return lo, k + 1
		}
		lo, step = k+1, step*2
	}
}

// all calls f with every address of z and its frames, in order.
func (z *lazyFrames) all(f func(va uint64, fr []symbol.Frame)) {
	if len(z.blocks) == 0 {
		return
	}
	b := z.blocks[0]
	d := newDecoder(z.p, int(b.off))
	va := b.prev
	for range z.n {
		va += d.uvarint()
		nf := d.uvarint()
		fr := z.arena.alloc(int(nf))
		for range nf {
			fn, file, line := d.uvarint(), d.uvarint(), d.uvarint()
			if d.err != nil {
				return // checked when decoded: never
			}
			fr = append(fr, symbol.Frame{Function: z.table[fn], File: z.table[file], Line: int(line)})
		}
		f(va, fr)
	}
}

// NumAddrs returns the number of addresses whose frames e holds outside
// its runs.
func (e *Entry) NumAddrs() int {
	n := len(e.Frames)
	if e.lazyFrames != nil {
		n += e.lazyFrames.n
	}
	if e.deltas != nil {
		n += len(e.deltas.vas)
	}
	return n
}

// deltaAddrs are the addresses of an entry's deltas (see delta.go), each
// once with the delta whose frames it has (the earliest holding it), and
// the deltas, undecoded. The Go compiler's entry over a compile loop
// has its addresses of some 20 recordings in deltas (26 k of its 99 k),
// and decoding their frames into Frames as the entry was read was 60 %
// of reading it (12 of 20 ms), of which a recording then looks up a
// fraction.
type deltaAddrs struct {
	zs []*lazyFrames
	// vas are the addresses, sorted; in the index in zs of each one's
	// delta.
	vas []uint64
	in  []uint32
	// last is where the last lookup ended in vas, where the next starts
	// looking: the bundle looks addresses up in increasing order.
	last int
}

// indexDeltas returns the index of the addresses of the deltas zs, in
// the order of the file, whose addresses checkAddrFrames kept (and which
// it lets go); nil for none. Each delta's addresses are sorted: they are
// merged two runs at a time, neighbours in the file, an address of an
// earlier delta keeping it. Merged into one run delta after delta, the
// Go command's 33 deltas (16 k addresses) took a third of reading its
// entry.
func indexDeltas(zs []*lazyFrames) *deltaAddrs {
	n := 0
	for _, z := range zs {
		n += len(z.vas)
	}
	if n == 0 {
		return nil
	}
	// Runs of the deltas in file order, laid end to end in vas and in;
	// bounds[j] is where run j starts.
	vas, in := make([]uint64, 0, n), make([]uint32, 0, n)
	bounds := make([]int, 0, len(zs)+1)
	for i, z := range zs {
		bounds = append(bounds, len(vas))
		vas = append(vas, z.vas...)
		for range z.vas {
			in = append(in, uint32(i))
		}
		z.vas = nil
	}
	bounds = append(bounds, len(vas))
	outVas, outIn := make([]uint64, 0, n), make([]uint32, 0, n)
	for len(bounds) > 2 {
		outVas, outIn = outVas[:0], outIn[:0]
		next := bounds[:0:0]
		for j := 0; j+1 < len(bounds); j += 2 {
			lo, mid := bounds[j], bounds[j+1]
			hi := mid
			if j+2 < len(bounds) {
				hi = bounds[j+2]
			}
			next = append(next, len(outVas))
			outVas, outIn = mergeRuns(outVas, outIn, vas[lo:mid], in[lo:mid], vas[mid:hi], in[mid:hi])
		}
		bounds = append(next, len(outVas))
		vas, in, outVas, outIn = outVas, outIn, vas, in
	}
	return &deltaAddrs{zs: zs, vas: vas, in: in}
}

// mergeRuns appends to vas and in the sorted addresses of a and b with
// their deltas' indexes, once each: an address in both keeps a's, the
// earlier deltas'.
func mergeRuns(vas []uint64, in []uint32, a []uint64, ain []uint32, b []uint64, bin []uint32) ([]uint64, []uint32) {
	i, k := 0, 0
	for i < len(a) && k < len(b) {
		switch {
		case a[i] < b[k]:
			vas, in = append(vas, a[i]), append(in, ain[i])
			i++
		case b[k] < a[i]:
			vas, in = append(vas, b[k]), append(in, bin[k])
			k++
		default:
			vas, in = append(vas, a[i]), append(in, ain[i])
			i, k = i+1, k+1
		}
	}
	vas, in = append(vas, a[i:]...), append(in, ain[i:]...)
	return append(vas, b[k:]...), append(in, bin[k:]...)
}

// frames returns the frames of va in x; ok is false when no delta holds
// it (or x is nil).
func (x *deltaAddrs) frames(va uint64) ([]symbol.Frame, bool) {
	if x == nil {
		return nil, false
	}
	vas := x.vas
	lo, hi := 0, len(vas)
	if i := x.last; i < len(vas) && vas[i] <= va {
		if vas[i] == va {
			return x.zs[x.in[i]].frames(va)
		}
		lo, hi = gallop(len(vas), i, func(k int) bool { return vas[k] >= va })
	}
	k, ok := slices.BinarySearch(vas[lo:hi], va)
	if k += lo; k < len(vas) {
		x.last = k
	}
	if !ok {
		return nil, false
	}
	return x.zs[x.in[k]].frames(va)
}
