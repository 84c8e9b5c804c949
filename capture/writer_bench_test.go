package capture

import (
	"io"
	"testing"
)

// The workloads of bench/capture-writer, which compares them with
// libsysprof-capture's writer: SAMPLE frames with 32-address callchains,
// and MARK frames with a group, a name and a short message.

func BenchmarkWriterSamples(b *testing.B) {
	w, err := NewWriter(io.Discard)
	if err != nil {
		b.Fatal(err)
	}
	addrs := make([]uint64, 32)
	for i := range addrs {
		addrs[i] = 0x400000 + uint64(i)*0x1000
	}
	s := &Sample{FrameHeader: FrameHeader{PID: 1234}, Addrs: addrs}
	b.SetBytes(sampleFixed + 8*32)
	b.ReportAllocs()
	var i int64
	for b.Loop() {
		s.Time = 1_000_000_000 + i*1000
		s.CPU = int16(i & 7)
		s.TID = 1234 + int32(i&3)
		addrs[0] = 0x400000 + uint64(i)
		if err := w.WriteFrame(s); err != nil {
			b.Fatal(err)
		}
		i++
	}
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
}

func BenchmarkWriterMarks(b *testing.B) {
	w, err := NewWriter(io.Discard)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(markFixed + 16)
	b.ReportAllocs()
	var i int64
	for b.Loop() {
		if err := w.AddMark(1_000_000_000+i*1000, 1234, 500, "nsprof", "bench-mark", "short message"); err != nil {
			b.Fatal(err)
		}
		i++
	}
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
}
