package symcache

import (
	"sort"

	"nsprof/symbol"
)

// An entry read from the cache keeps the frames of the addresses of its
// payload as the file encodes them (lazyFrames), checked whole when read,
// and decodes an address's only when it is looked up: the Go compiler's
// entry over a compile loop holds tens of thousands of addresses, up to
// maxCachedAddrs, of which a recording looks up a part, and made into a
// map of frame slices as it was read they were most of what reading the
// entry cost (7 % of a warm recording's CPU). Addresses added since, from
// deltas or by AddFrames, are in Entry.Frames.

// addrBlockLen is the number of addresses between two starts lazyFrames
// keeps: a lookup decodes at most this many.
const addrBlockLen = 4

// lazyFrames are the addresses of an entry and their frames in its
// encoded payload p, every field checked when p was decoded.
type lazyFrames struct {
	p     []byte
	table []string
	n     int
	// blocks hold the start of every addrBlockLen-th address.
	blocks []addrBlock
	// arena holds the frames decoded so far, handed out in slices of
	// it: one allocation per address looked up was most of a lookup.
	arena frameArena
}

// frameArena hands out frame slices from chunks, each slice's capacity
// its length so that an append to it copies.
type frameArena struct{ buf []symbol.Frame }

// arenaChunk is the number of frames a chunk holds.
const arenaChunk = 4096

// alloc returns an empty slice with room for n frames.
func (a *frameArena) alloc(n int) []symbol.Frame {
	if n == 0 {
		return []symbol.Frame{} // not nil: an address known to have none
	}
	if n > arenaChunk/8 {
		return make([]symbol.Frame, 0, n)
	}
	if cap(a.buf)-len(a.buf) < n {
		a.buf = make([]symbol.Frame, 0, arenaChunk)
	}
	fr := a.buf[len(a.buf) : len(a.buf) : len(a.buf)+n]
	a.buf = a.buf[:len(a.buf)+n]
	return fr
}

// addrBlock is where a block of addresses starts: its first address,
// the one before it (0 for the first), which the first is encoded from,
// and its offset in the payload.
type addrBlock struct {
	va, prev uint64
	off      uint32
}

// checkAddrFrames reads the frames of addresses as appendAddrFrames
// writes them from d, a decoder of the payload p, checking every field,
// and returns them undecoded.
func checkAddrFrames(d *decoder, p []byte, table []string) *lazyFrames {
	z := &lazyFrames{p: p, table: table}
	nva := d.count(2)
	if nva > 0 {
		z.blocks = make([]addrBlock, 0, (nva+addrBlockLen-1)/addrBlockLen)
	}
	var va uint64
	for i := range nva {
		off := d.off
		prev := va
		var nf int
		va, nf = d.nextAddr(i, va)
		d.skipFrames(nf, len(table), "address %#x", va)
		if d.err != nil {
			return nil
		}
		if i%addrBlockLen == 0 {
			z.blocks = append(z.blocks, addrBlock{va: va, prev: prev, off: uint32(off)})
		}
	}
	z.n = nva
	return z
}

// frames returns the frames of va; ok is false when z does not hold it.
func (z *lazyFrames) frames(va uint64) (fr []symbol.Frame, ok bool) {
	j := sort.Search(len(z.blocks), func(j int) bool { return z.blocks[j].va > va }) - 1
	if j < 0 {
		return nil, false
	}
	b := z.blocks[j]
	d := decoder{b: z.p[b.off:], off: int(b.off)}
	at := b.prev
	for range min(addrBlockLen, z.n-j*addrBlockLen) {
		at += d.uvarint()
		nf := d.uvarint()
		if d.err != nil || at > va {
			return nil, false
		}
		if at == va {
			fr = z.arena.alloc(int(nf))
			for range nf {
				fn, file, line := d.uvarint(), d.uvarint(), d.uvarint()
				fr = append(fr, symbol.Frame{Function: z.table[fn], File: z.table[file], Line: int(line)})
			}
			return fr, d.err == nil
		}
		for range 3 * nf {
			d.uvarint()
		}
	}
	return nil, false
}

// all calls f with every address of z and its frames, in order.
func (z *lazyFrames) all(f func(va uint64, fr []symbol.Frame)) {
	if len(z.blocks) == 0 {
		return
	}
	b := z.blocks[0]
	d := decoder{b: z.p[b.off:], off: int(b.off)}
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
	return n
}
