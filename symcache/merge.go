package symcache

import (
	"encoding/binary"
	"maps"
	"slices"
)

// An entry written whole again (Put of an entry read, once its deltas
// outweigh it) has the addresses of its payload, of each delta and of
// Frames merged in address order, an address keeping the frames of the
// first that holds it (Frames, then the deltas from the first, then the
// payload, as FramesAt answers). Those of the payload and the deltas are
// copied from the file as they are encoded, their strings numbered in
// the new table, not decoded into frames: decoded, the 108 k addresses
// of the Go compiler's entry (2.7 MB) held 29 MB of heap while it was
// written, twice what a recording of a compile loop held otherwise.

// addrCursor walks the addresses of a lazyFrames in order.
type addrCursor struct {
	z    *lazyFrames
	d    decoder
	left int // addresses after the current one
	va   uint64
	ok   bool // there is a current address
	// refs are the current address's frames: function, file and line
	// of each, the strings as z's table numbers them.
	refs []uint64
	// remap numbers z's strings in the table written, plus one (0: not
	// numbered yet).
	remap []uint64
}

// newAddrCursor returns a cursor at the first address of z; z's blocks
// are checked (see checkAll).
func newAddrCursor(z *lazyFrames) *addrCursor {
	c := &addrCursor{z: z, left: z.n}
	if len(z.blocks) > 0 {
		b := z.blocks[0]
		c.d = newDecoder(z.p, int(b.off))
		c.va = b.prev
	}
	c.next()
	return c
}

// size returns the size of the encoded addresses of the cursor's source.
func (c *addrCursor) size() int {
	if len(c.z.blocks) == 0 {
		return 0
	}
	return c.z.end - int(c.z.blocks[0].off)
}

// next moves to the next address and reads its frames.
func (c *addrCursor) next() {
	c.ok = false
	if c.left == 0 || c.d.err != nil {
		return
	}
	c.left--
	c.va += c.d.uvarint()
	nf := c.d.count(3)
	c.refs = c.refs[:0]
	for range 3 * nf {
		c.refs = append(c.refs, c.d.uvarint())
	}
	// Checked when the entry was read: an error is never met here, and
	// would end the cursor.
	c.ok = c.d.err == nil
}

// appendFrames appends the frames of the current address as
// stringTable.appendFrames does, their strings numbered in t.
func (c *addrCursor) appendFrames(t *stringTable, b []byte) []byte {
	b = binary.AppendUvarint(b, uint64(len(c.refs)/3))
	for i := 0; i < len(c.refs); i += 3 {
		b = binary.AppendUvarint(b, c.str(t, c.refs[i]))
		b = binary.AppendUvarint(b, c.str(t, c.refs[i+1]))
		b = binary.AppendUvarint(b, c.refs[i+2])
	}
	return b
}

// str returns the number in t of string i of the cursor's table.
func (c *addrCursor) str(t *stringTable, i uint64) uint64 {
	if c.remap == nil {
		c.remap = make([]uint64, len(c.z.table))
	}
	if n := c.remap[i]; n > 0 {
		return n - 1
	}
	n := t.intern(c.z.table[i])
	c.remap[i] = n + 1
	return n
}

// appendEntryAddrs appends the addresses of e outside its runs and
// their frames, merged from e's sources as the comment above says, as
// version 4 has them (see appendRegion): their count, the region's
// length, then for each address in order its distance from the one
// before and its frames, then the index, the address, the one before (0
// for the first) and the offset in the region of every addrBlockLen-th
// address. The bytes are those the encoding of every address's frames
// decoded made (appendIndexedAddrFrames, kept in the tests).
func (t *stringTable) appendEntryAddrs(b []byte, e *Entry) []byte {
	if e.lazyFrames != nil && !e.lazyFrames.checkAll() {
		// A block found bad: none of them is kept (see settle).
		e.lazyFrames = nil
	}
	added := slices.Sorted(maps.Keys(e.Frames))
	var curs []*addrCursor
	if e.deltas != nil {
		for _, z := range e.deltas.zs {
			curs = append(curs, newAddrCursor(z))
		}
	}
	if e.lazyFrames != nil {
		curs = append(curs, newAddrCursor(e.lazyFrames))
	}
	// Sized for what the sources encode (their strings numbered anew
	// take about as many bytes): grown by append, a quarter at a time,
	// its copies were four times its size.
	size := 16 * len(added)
	for _, c := range curs {
		size += c.size()
	}
	region := make([]byte, 0, size+size/16)
	var index []byte
	prev, n := uint64(0), 0
	for {
		// The least address of the sources, from the first holding it.
		var va uint64
		from, found := -1, false
		if len(added) > 0 {
			va, found = added[0], true
		}
		for i, c := range curs {
			if c.ok && (!found || c.va < va) {
				va, from, found = c.va, i, true
			}
		}
		if !found {
			break
		}
		if n%addrBlockLen == 0 {
			index = appendBlockStart(index, va, prev, len(region))
		}
		region = binary.AppendUvarint(region, va-prev)
		prev, n = va, n+1
		if from < 0 {
			region = t.appendFrames(region, e.Frames[va])
			added = added[1:]
		} else {
			region = curs[from].appendFrames(t, region)
		}
		for _, c := range curs {
			if c.ok && c.va == va {
				c.next()
			}
		}
	}
	return appendRegion(b, n, region, index)
}
