package symcache

import (
	"encoding/binary"
)

// encodeV3 returns the file contents of e as version 3 wrote them: its
// addresses, frame lists and runs without an index (see appendV3).
func encodeV3(key string, e *Entry) []byte {
	return encodeAs(key, e, 3, sortedAddrs((*stringTable).appendAddrFrames), appendV3)
}

// appendV3 appends e's frame lists and runs as versions 2 and 3 have
// them: the count of lists, each list, then the count of runs and each
// run (its start as the distance from the end of the one before, its
// length, its list).
func appendV3(body []byte, strs *stringTable, e *Entry) []byte {
	body = binary.AppendUvarint(body, uint64(e.NumFrameLists()))
	for fr := range e.allLists() {
		body = strs.appendFrames(body, fr)
	}
	body = binary.AppendUvarint(body, uint64(e.NumRuns()))
	prev := uint64(0)
	for r := range e.allRuns() {
		body = binary.AppendUvarint(body, r.Lo-prev)
		body = binary.AppendUvarint(body, r.Hi-r.Lo)
		body = binary.AppendUvarint(body, uint64(r.Frames))
		prev = r.Hi
	}
	return body
}
