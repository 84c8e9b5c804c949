package symcache

import (
	"encoding/binary"
	"slices"
)

// appendIndexed appends e's frame lists, then its runs (each start as
// the distance from the end of the one before, then its length and its
// list), as version 4 has them: each region after its count and length,
// then its index, the offset in it of every listBlockLen-th list, and
// the start, the end of the run before and the offset of every
// runBlockLen-th run, fixed-size, so that a reader finds a block without
// walking the region (see lazy.go).
func appendIndexed(body []byte, strs *stringTable, e *Entry) []byte {
	var region, index []byte
	i := 0
	for fr := range e.allLists() {
		if i%listBlockLen == 0 {
			index = binary.LittleEndian.AppendUint32(index, uint32(len(region)))
		}
		region = strs.appendFrames(region, fr)
		i++
	}
	body = appendRegion(body, i, region, index)
	region, index, i = region[:0], index[:0], 0
	prev := uint64(0)
	for r := range e.allRuns() {
		if i%runBlockLen == 0 {
			index = appendBlockStart(index, r.Lo, prev, len(region))
		}
		region = binary.AppendUvarint(region, r.Lo-prev)
		region = binary.AppendUvarint(region, r.Hi-r.Lo)
		region = binary.AppendUvarint(region, uint64(r.Frames))
		prev = r.Hi
		i++
	}
	return appendRegion(body, i, region, index)
}

// blockStart is where a block of runs or addresses starts: its first
// item's address (a run's Lo), the end of the item before it (the Hi of
// the run before, the address before; 0 for the first), which its start
// is encoded from, and its offset in the payload.
type blockStart struct {
	at, prev uint64
	off      uint32
}

// blockIndexSize is the size of an index entry of a block of runs or
// addresses: its first item's address and the item before (u64 each),
// its offset in its region (u32).
const blockIndexSize = 8 + 8 + 4

// appendBlockStart appends the index entry of a block starting at at,
// after prev, at offset off of its region.
func appendBlockStart(index []byte, at, prev uint64, off int) []byte {
	index = binary.LittleEndian.AppendUint64(index, at)
	index = binary.LittleEndian.AppendUint64(index, prev)
	return binary.LittleEndian.AppendUint32(index, uint32(off))
}

// blockIndex reads the index of the blocks of a region of runs or
// addresses from regionAt to regionEnd in the payload (appendBlockStart),
// checked: the first block at the region's start, encoded from 0; each
// after the one before, in the region; each first item at or after the
// item before it, which is after the first item of the block before.
// The offsets returned are the payload's. what names the items in an
// error.
func (d *decoder) blockIndex(what string, index []byte, regionAt, regionEnd int) []blockStart {
	n := len(index) / blockIndexSize
	if n == 0 || d.err != nil {
		return nil
	}
	bs := make([]blockStart, n)
	for j := range bs {
		x := index[blockIndexSize*j:]
		b := blockStart{at: binary.LittleEndian.Uint64(x), prev: binary.LittleEndian.Uint64(x[8:]), off: binary.LittleEndian.Uint32(x[16:])}
		at := regionAt + int(b.off)
		ok := b.prev <= b.at && at < regionEnd
		if j == 0 {
			ok = ok && b.off == 0 && b.prev == 0
		} else {
			last := bs[j-1]
			ok = ok && at > int(last.off) && b.at > last.at && b.prev > last.at
		}
		if !ok {
			d.fail("%s block %d [%#x, after %#x, at %d] out of order", what, j, b.at, b.prev, b.off)
			return nil
		}
		b.off = uint32(at)
		bs[j] = b
	}
	return bs
}

// appendRegion appends a region of n items: their count, its length,
// its bytes, then its index.
func appendRegion(b []byte, n int, region, index []byte) []byte {
	b = slices.Grow(b, 2*binary.MaxVarintLen64+len(region)+len(index))
	b = binary.AppendUvarint(b, uint64(n))
	b = binary.AppendUvarint(b, uint64(len(region)))
	return append(append(b, region...), index...)
}

// decodeCovered reads e's Covered: spans sorted, disjoint and not empty.
func decodeCovered(d *decoder, e *Entry) {
	nc := d.count(2)
	if nc > 0 {
		e.Covered = make([]Span, 0, nc)
	}
	prev := uint64(0)
	for i := range nc {
		lo, hi := d.span(prev, "covered range", i)
		if d.err != nil {
			return
		}
		e.Covered = append(e.Covered, Span{lo, hi})
		prev = hi
	}
}

// span reads a span encoded from prev, the end of the one before: its
// gap, its length; what and i name it in an error.
func (d *decoder) span(prev uint64, what string, i int) (lo, hi uint64) {
	gap, n := d.uvarint(), d.uvarint()
	lo, hi = prev+gap, prev+gap+n
	if d.err == nil && (lo < prev || hi <= lo) {
		d.fail("%s %d: empty, out of order or overflowing", what, i)
	}
	return lo, hi
}

// decodeIndexed reads e's Covered, then the regions of its frame lists
// and runs and their indexes (version 4, see encode), and keeps them
// undecoded in e.lazy, with the string table and the payload p they are
// in. Only the indexes are checked here: starts in their region, in
// order, and runs' starts increasing; each block is checked whole when a
// lookup first reaches it (see lazyRanges).
func decodeIndexed(d *decoder, e *Entry, p []byte, table []string) {
	decodeCovered(d, e)
	z := &lazyRanges{p: p, table: table, covered: e.Covered}
	nl, listsAt, index := d.region("frame lists", 4, listBlockLen, 4) // frames, function, file, line
	z.nlists, z.listsEnd = nl, d.offset()-len(index)
	if nb := len(index) / 4; nb > 0 {
		z.lists = make([]uint32, nb)
		z.listState = make([]uint8, nb)
	}
	for k := range z.lists {
		off := binary.LittleEndian.Uint32(index[4*k:])
		at := listsAt + int(off)
		if (k == 0 && off != 0) || (k > 0 && at <= int(z.lists[k-1])) || at >= z.listsEnd {
			d.fail("frame list block %d at %d of a region of %d bytes, out of order", k, off, z.listsEnd-listsAt)
			return
		}
		z.lists[k] = uint32(at)
	}
	nr, runsAt, index := d.region("runs", 3, runBlockLen, blockIndexSize) // gap, length, list
	if nr > 0 && nl == 0 {
		d.fail("%d runs and no frame list", nr)
	}
	z.nruns, z.runsEnd = nr, d.offset()-len(index)
	if z.blocks = d.blockIndex("run", index, runsAt, z.runsEnd); d.err != nil {
		return
	}
	z.runState = make([]uint8, len(z.blocks))
	if d.err == nil && (nl > 0 || nr > 0) {
		e.lazy = z
	}
}

// region reads a region of items of at least size bytes each (see
// appendRegion): their count, its length, then skips its bytes and reads
// its index, of one entry of entrySize bytes per block of blockLen items.
// It returns the count, where the region starts and the index.
func (d *decoder) region(what string, size, blockLen, entrySize int) (n, at int, index []byte) {
	n = d.count(size)
	length := d.uvarint()
	if d.err == nil && (length > uint64(len(d.b)) || uint64(n) > length/uint64(size) || (n == 0) != (length == 0)) {
		d.fail("%d %s in a region of %d bytes, %d left", n, what, length, len(d.b))
	}
	if d.err != nil {
		return 0, 0, nil
	}
	at = d.offset()
	d.b = d.b[length:]
	k := (n + blockLen - 1) / blockLen * entrySize
	if k > len(d.b) {
		d.fail("index of %d %s: %d bytes, %d left", n, what, k, len(d.b))
		return 0, 0, nil
	}
	index, d.b = d.b[:k], d.b[k:]
	return n, at, index
}

// decodeRanges reads e's Covered, then checks its frame lists and runs
// (versions 2 and 3, without an index) and keeps them undecoded in
// e.lazy, with the string table and the payload p they are in, indexed
// as decodeIndexed indexes them: spans and runs must be sorted, disjoint
// and not empty, each run must lie in a covered span and name a frame
// list, and each list must have 1 to maxFramesPerAddr frames of strings
// of the table and lines up to maxLine. A run outside would answer for
// an address the entry does not know.
func decodeRanges(d *decoder, e *Entry, p []byte, table []string) {
	decodeCovered(d, e)
	if d.err != nil {
		return
	}
	z := &lazyRanges{p: p, table: table, covered: e.Covered}
	nl := d.count(4) // frames, function, file, line
	if nl > 0 {
		z.lists = make([]uint32, 0, (nl+listBlockLen-1)/listBlockLen)
	}
	for i := range nl {
		if i%listBlockLen == 0 {
			z.lists = append(z.lists, uint32(d.offset()))
		}
		d.checkList(len(table), i/listBlockLen)
		if d.err != nil {
			return
		}
	}
	z.nlists, z.listsEnd = nl, d.offset()
	nr := d.count(3)
	if nr > 0 {
		z.blocks = make([]blockStart, 0, (nr+runBlockLen-1)/runBlockLen)
	}
	z.nruns = nr
	prev := uint64(0)
	c := 0 // the covered span the runs are in so far
	// On a slice of its own, binary.Uvarint inlined, as skipFrames; a
	// bad varint is read again by span, for its error.
	b := d.b
	for i := range nr {
		gap, k1 := binary.Uvarint(b)
		n, k2 := uint64(0), 0
		if k1 > 0 {
			n, k2 = binary.Uvarint(b[k1:])
		}
		l, k3 := uint64(0), 0
		if k2 > 0 {
			l, k3 = binary.Uvarint(b[k1+k2:])
		}
		if k3 <= 0 {
			d.b = b
			d.span(prev, "run", i)
			d.uvarint()
			return
		}
		off := d.end - len(b)
		lo, hi := prev+gap, prev+gap+n
		if lo < prev || hi <= lo {
			d.b = b
			d.fail("run %d: empty, out of order or overflowing", i)
			return
		}
		for c < len(e.Covered) && e.Covered[c].Hi <= lo {
			c++
		}
		if c == len(e.Covered) || lo < e.Covered[c].Lo || hi > e.Covered[c].Hi {
			d.b = b
			d.fail("run %d [%#x, %#x) outside the covered ranges", i, lo, hi)
			return
		}
		if l >= uint64(nl) {
			d.b = b
			d.fail("run %d: frame list %d of %d", i, l, nl)
			return
		}
		if i%runBlockLen == 0 {
			z.blocks = append(z.blocks, blockStart{at: lo, prev: prev, off: uint32(off)})
		}
		prev = hi
		b = b[k1+k2+k3:]
	}
	d.b = b
	z.runsEnd = d.offset()
	if nl > 0 || nr > 0 {
		e.lazy = z
	}
}
