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
	addrs := benchAddrs()
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

// BenchmarkWriterAllocations: what `record --memprof` writes per event,
// an allocation with a 4-address stack and its free.
func BenchmarkWriterAllocations(b *testing.B) {
	w, err := NewWriter(io.Discard)
	if err != nil {
		b.Fatal(err)
	}
	addrs := []uint64{0x401136, 0x7f0000089aa4, 0x7f000010a3f0, 0x401000}
	a := &Allocation{FrameHeader: FrameHeader{CPU: -1, PID: 1234}, TID: 1235}
	b.SetBytes(2*allocationFixed + 8*4)
	b.ReportAllocs()
	var i int64
	for b.Loop() {
		a.Time = 1_000_000_000 + i*1000
		a.Addr, a.Size, a.Addrs = 0x5555000+uint64(i&255)*16, 100, addrs
		if err := w.WriteFrame(a); err != nil {
			b.Fatal(err)
		}
		a.Time += 500
		a.Size, a.Addrs = 0, nil
		if err := w.WriteFrame(a); err != nil {
			b.Fatal(err)
		}
		i++
	}
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkWriterAddSample is BenchmarkWriterSamples through AddSample.
func BenchmarkWriterAddSample(b *testing.B) {
	w, err := NewWriter(io.Discard)
	if err != nil {
		b.Fatal(err)
	}
	addrs := benchAddrs()
	b.SetBytes(sampleFixed + 8*32)
	b.ReportAllocs()
	var i int64
	for b.Loop() {
		addrs[0] = 0x400000 + uint64(i)
		if err := w.AddSample(1_000_000_000+i*1000, int16(i&7), 1234, 1234+int32(i&3), addrs); err != nil {
			b.Fatal(err)
		}
		i++
	}
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
}

// benchAddrs returns the 32-address callchain of the sample benchmarks.
func benchAddrs() []uint64 {
	addrs := make([]uint64, 32)
	for i := range addrs {
		addrs[i] = 0x400000 + uint64(i)*0x1000
	}
	return addrs
}
