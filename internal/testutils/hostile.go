package testutils

import (
	"bytes"
	"compress/gzip"
)

// GzipBomb returns gzip data that decompresses to head followed by unit
// repeated until at least size bytes: one member holding head, then
// copies of one member holding unit repeated to 8 MiB, which gzip readers
// join (RFC 1952 multi-member). Its ratio nears deflate's 1032:1 for a
// repetitive unit, and building it costs one 8 MiB compression.
func GzipBomb(head, unit []byte, size int64) []byte {
	member := func(data []byte) []byte {
		var b bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&b, gzip.BestCompression)
		zw.Write(data)
		zw.Close()
		return b.Bytes()
	}
	out := member(head)
	block := bytes.Repeat(unit, max(1, (8<<20)/max(1, len(unit))))
	m := member(block)
	for n := int64(len(head)); n < size; n += int64(len(block)) {
		out = append(out, m...)
	}
	return out
}
