package capture

import (
	"encoding/binary"
	"math/rand/v2"
	"strings"
	"testing"
)

// randFrame returns a random valid frame of type t. Strings in fixed-size
// fields stay within their limits (longer ones are truncated by design and
// tested elsewhere); variable parts sometimes take the largest size.
func randFrame(r *rand.Rand, t FrameType) Frame {
	h := FrameHeader{CPU: int16(r.IntN(1<<16) - 1<<15), PID: r.Int32() - 1<<30, Time: r.Int64() - 1<<62}
	str := func(max int) string {
		n := r.IntN(max + 1)
		if r.IntN(8) == 0 {
			n = max
		}
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(1 + r.IntN(255)) // any byte but NUL
		}
		return string(b)
	}
	addrs := func(max int) []uint64 {
		n := r.IntN(64)
		if r.IntN(16) == 0 {
			n = max
		}
		if n == 0 {
			return nil
		}
		a := make([]uint64, n)
		for i := range a {
			a[i] = r.Uint64()
		}
		return a
	}
	switch t {
	case TypeTimestamp:
		return &Timestamp{FrameHeader: h}
	case TypeSample:
		return &Sample{FrameHeader: h, TID: r.Int32(), Addrs: addrs(MaxSampleAddrs)}
	case TypeMap:
		id := ""
		if r.IntN(2) == 0 {
			id = strings.Repeat("ab", 1+r.IntN(32))
		}
		return &Map{FrameHeader: h, Start: r.Uint64(), End: r.Uint64(), Offset: r.Uint64(), Inode: r.Uint64(), Filename: str(4096), BuildID: id}
	case TypeProcess:
		return &Process{FrameHeader: h, Cmdline: str(MaxFrameLen - processFixed - 1)}
	case TypeFork:
		return &Fork{FrameHeader: h, ChildPID: r.Int32()}
	case TypeExit:
		return &Exit{FrameHeader: h}
	case TypeJITMap:
		f := &JITMap{FrameHeader: h}
		for i := r.IntN(20); i > 0; i-- {
			f.Entries = append(f.Entries, JITEntry{Addr: r.Uint64(), Name: str(200)})
		}
		return f
	case TypeCounterDefine:
		f := &CounterDefine{FrameHeader: h}
		n := r.IntN(20)
		if r.IntN(16) == 0 {
			n = MaxCountersPerFrame
		}
		for i := 0; i < n; i++ {
			f.Counters = append(f.Counters, Counter{Category: str(31), Name: str(31), Description: str(51), ID: 1 + r.Uint32N(MaxCounterID), Type: CounterType(r.IntN(2)), Value: CounterValue(r.Uint64())})
		}
		return f
	case TypeCounterSet:
		f := &CounterSet{FrameHeader: h}
		n := r.IntN(40)
		if r.IntN(16) == 0 {
			n = MaxCounterValuesPerFrame
		}
		for i := 0; i < n; i++ {
			f.Updates = append(f.Updates, CounterUpdate{ID: 1 + r.Uint32N(1<<31), Value: CounterValue(r.Uint64())})
		}
		return f
	case TypeMark:
		return &Mark{FrameHeader: h, Duration: r.Int64(), Group: str(23), Name: str(39), Message: str(MaxFrameLen - markFixed - 1)}
	case TypeMetadata:
		return &Metadata{FrameHeader: h, ID: str(39), Value: str(MaxFrameLen - metadataFixed - 1)}
	case TypeLog:
		return &Log{FrameHeader: h, Severity: uint16(r.IntN(1 << 16)), Domain: str(31), Message: str(MaxFrameLen - logFixed - 1)}
	case TypeFileChunk:
		n := r.IntN(1000)
		if r.IntN(8) == 0 {
			n = MaxFileChunkData
		}
		var d []byte
		for i := 0; i < n; i++ {
			d = append(d, byte(r.IntN(256)))
		}
		return &FileChunk{FrameHeader: h, IsLast: r.IntN(2) == 0, Path: str(255), Data: d}
	case TypeAllocation:
		return &Allocation{FrameHeader: h, Addr: r.Uint64(), Size: r.Int64(), TID: r.Int32(), Addrs: addrs(MaxAllocationAddrs)}
	case TypeOverlay:
		return &Overlay{FrameHeader: h, Layer: uint8(r.IntN(256)), Src: str(4000), Dst: str(4000)}
	case TypeTrace:
		return &Trace{FrameHeader: h, TID: r.Int32(), Entering: r.IntN(2) == 0, Addrs: addrs(MaxSampleAddrs)}
	case TypeDBusMessage:
		n := r.IntN(2000)
		if r.IntN(8) == 0 {
			n = MaxFrameLen - dbusFixed
		}
		var m []byte
		for i := 0; i < n; i++ {
			m = append(m, byte(r.IntN(256)))
		}
		return &DBusMessage{FrameHeader: h, BusType: uint8(r.IntN(4)), Flags: uint16(r.IntN(1 << 14)), Message: m}
	}
	panic(t)
}

// TestRoundTripProperty writes thousands of random frames of every type in
// both byte orders and requires that each reads back equal.
func TestRoundTripProperty(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	n := 3000
	if testing.Short() {
		n = 300
	}
	for _, order := range []binary.ByteOrder{binary.LittleEndian, binary.BigEndian} {
		in := make([]Frame, n)
		for i := range in {
			in[i] = randFrame(r, FrameType(1+i%int(maxKnownType)))
		}
		b := writeAll(t, WriterOptions{ByteOrder: order, NewFrameTypes: true}, in)
		_, out, err := readAll(t, b)
		if err != nil {
			t.Fatal(err)
		}
		if len(out) != len(in) {
			t.Fatalf("%v: read %d of %d frames", order, len(out), len(in))
		}
		for i := range in {
			if !equalFrames(in[i:i+1], out[i:i+1]) {
				t.Fatalf("%v: frame %d (%s) differs after round trip", order, i, in[i].Type())
			}
		}
	}
}
