package record

import (
	"encoding/binary"
	"io"
	"testing"

	"nsprof/capture"
)

// BenchmarkCollectorWrite writes collector marks (108 bytes, as GLib's)
// from a copied ring into a capture: what the recorder must keep up with.
func BenchmarkCollectorWrite(b *testing.B) {
	const n = 1000
	batch := make([]byte, 0, n*112)
	for i := range n {
		fr := make([]byte, 112)
		binary.NativeEndian.PutUint16(fr[0:], 112)
		binary.NativeEndian.PutUint32(fr[4:], 42)
		binary.NativeEndian.PutUint64(fr[8:], uint64(1000+i))
		fr[16] = byte(capture.TypeMark)
		copy(fr[32:], "bench")
		copy(fr[56:], "mark")
		copy(fr[96:], "i=123456")
		batch = append(batch, fr...)
	}
	w, _ := capture.NewWriter(io.Discard)
	r := &recorder{w: w, opts: &Options{Log: io.Discard}}
	c := &controlFD{closed: true}
	g := &collectorRing{}
	c.rings = []*collectorRing{g}
	b.ReportAllocs()
	b.SetBytes(int64(len(batch)))
	for b.Loop() {
		g.in = append(g.in[:0], batch...)
		c.poll(r)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/frame")
}
