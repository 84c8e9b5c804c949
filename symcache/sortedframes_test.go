package symcache

import (
	"encoding/binary"

	"nsprof/symbol"
)

// The encoding of an entry's addresses before appendEntryAddrs: every
// address's frames decoded, merged in address order, then encoded. It is
// the reference appendEntryAddrs is checked against, byte for byte.

// sortedAddrs adapts an encoding of decoded addresses to encodeAs.
func sortedAddrs(f func(t *stringTable, b []byte, frames []addrFrames) []byte) func(t *stringTable, b []byte, e *Entry) []byte {
	return func(t *stringTable, b []byte, e *Entry) []byte { return f(t, b, e.sortedFrames()) }
}

// sortedFrames returns what allFrames does, in address order, without a
// map: writing the Go compiler's entry whole (37 k addresses, from its
// payload and 21 deltas) spent 60 % of its 123 ms in the map of them and
// sorting its keys. The payload's addresses and each delta's are in
// order already: they are merged, those of e.Frames first, then of the
// deltas from the first, then of the payload, an address keeping the
// frames of the first that holds it, as allFrames keeps them.
func (e *Entry) sortedFrames() []addrFrames {
	if e.lazyFrames != nil && !e.lazyFrames.checkAll() {
		// A block found bad: none of them is kept (see settle).
		e.lazyFrames = nil
	}
	runs := [][]addrFrames{sortedOf(e.Frames)}
	if e.deltas != nil {
		for _, z := range e.deltas.zs {
			runs = append(runs, z.sorted())
		}
	}
	if e.lazyFrames != nil {
		runs = append(runs, e.lazyFrames.sorted())
	}
	for len(runs) > 1 {
		next := runs[:0:0]
		for i := 0; i < len(runs); i += 2 {
			if i+1 == len(runs) {
				next = append(next, runs[i])
				break
			}
			next = append(next, mergeFrameRuns(runs[i], runs[i+1]))
		}
		runs = next
	}
	return runs[0]
}

// mergeFrameRuns merges two runs in address order, an address of both
// keeping a's frames.
func mergeFrameRuns(a, b []addrFrames) []addrFrames {
	out := make([]addrFrames, 0, len(a)+len(b))
	i, k := 0, 0
	for i < len(a) && k < len(b) {
		switch {
		case a[i].va < b[k].va:
			out = append(out, a[i])
			i++
		case b[k].va < a[i].va:
			out = append(out, b[k])
			k++
		default:
			out = append(out, a[i])
			i, k = i+1, k+1
		}
	}
	out = append(out, a[i:]...)
	return append(out, b[k:]...)
}

// appendIndexedAddrFrames appends the frames of addresses as version 4
// has them (see appendRegion): their count, the region's length, then
// for each address in order its distance from the one before and its
// frames, then the index, the address, the one before (0 for the first)
// and the offset in the region of every addrBlockLen-th address.
func (t *stringTable) appendIndexedAddrFrames(b []byte, frames []addrFrames) []byte {
	var region, index []byte
	prev := uint64(0)
	for i, a := range frames {
		if i%addrBlockLen == 0 {
			index = appendBlockStart(index, a.va, prev, len(region))
		}
		region = binary.AppendUvarint(region, a.va-prev)
		prev = a.va
		region = t.appendFrames(region, a.fr)
	}
	return appendRegion(b, len(frames), region, index)
}

// sorted returns z's addresses and their frames, in order.
func (z *lazyFrames) sorted() []addrFrames {
	out := make([]addrFrames, 0, z.n)
	z.all(func(va uint64, fr []symbol.Frame) { out = append(out, addrFrames{va, fr}) })
	return out
}
