package capture

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"
)

// allFrames returns one frame of every type with every field set.
func allFrames() []Frame {
	h := func(i int) FrameHeader {
		return FrameHeader{CPU: int16(i % 4), PID: int32(1000 + i), Time: int64(1_000_000_000 + i*1000)}
	}
	return []Frame{
		&Timestamp{FrameHeader: h(1)},
		&Sample{FrameHeader: h(2), TID: 1003, Addrs: []uint64{ContextKernel, 0xffffffff81000010, ContextUser, 0x401000, 0x7f0000001234}},
		&Map{FrameHeader: h(3), Start: 0x400000, End: 0x401000, Offset: 0x1000, Inode: 123456, Filename: "/usr/bin/true"},
		&Map{FrameHeader: h(4), Start: 0x7f0000000000, End: 0x7f0000100000, Offset: 0, Inode: 42, Filename: "/lib/libc.so.6", BuildID: "0123456789abcdef0123456789abcdef01234567"},
		&Process{FrameHeader: h(5), Cmdline: "demo --flag value"},
		&Fork{FrameHeader: h(6), ChildPID: 2001},
		&Exit{FrameHeader: h(7)},
		&JITMap{FrameHeader: h(8), Entries: []JITEntry{{JITMapMark | 1, "js::foo"}, {JITMapMark | 2, "js::bar"}}},
		&CounterDefine{FrameHeader: h(9), Counters: []Counter{
			{Category: "CPU Percent", Name: "Total CPU 0", Description: "Total CPU usage 0", ID: 1, Type: CounterDouble, Value: DoubleValue(12.5)},
			{Category: "Memory", Name: "Used", Description: "Memory used", ID: 2, Type: CounterInt64, Value: IntValue(-7)},
		}},
		&CounterSet{FrameHeader: h(10), Updates: []CounterUpdate{{1, DoubleValue(99.25)}, {2, IntValue(1 << 40)}, {3, 1}, {4, 2}, {5, 3}, {6, 4}, {7, 5}, {8, 6}, {9, 7}}},
		&Mark{FrameHeader: h(11), Duration: 12345, Group: "group", Name: "name", Message: "message text"},
		&Metadata{FrameHeader: h(12), ID: "nsprof.version", Value: "0.1"},
		&Log{FrameHeader: h(13), Severity: LogWarning, Domain: "Gtk", Message: "hello"},
		&FileChunk{FrameHeader: h(14), IsLast: true, Path: "/proc/mounts", Data: []byte("proc /proc proc rw 0 0\n")},
		&Allocation{FrameHeader: h(15), Addr: 0x55550000, Size: 4096, TID: 1016, Addrs: []uint64{0x401000, 0x401100}},
		&Overlay{FrameHeader: h(16), Layer: 3, Src: "/var/lib/containers/storage/overlay/abc/diff", Dst: "/"},
		&Trace{FrameHeader: h(17), TID: 1018, Entering: true, Addrs: []uint64{0x1, 0x2}},
		&DBusMessage{FrameHeader: h(18), BusType: BusSession, Flags: DBusFlagMessageTooLarge, Message: []byte{'l', 1, 0, 1}},
	}
}

func writeAll(t testing.TB, opts WriterOptions, frames []Frame) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := NewWriterWithOptions(&buf, opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range frames {
		if err := w.WriteFrame(f); err != nil {
			t.Fatalf("write %s: %v", f.Type(), err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func readAll(t testing.TB, b []byte) (FileHeader, []Frame, error) {
	t.Helper()
	r, err := NewReader(bytes.NewReader(b))
	if err != nil {
		return FileHeader{}, nil, err
	}
	var out []Frame
	for {
		f, err := r.Next()
		if err == io.EOF {
			return r.Header(), out, nil
		}
		if err != nil {
			return r.Header(), out, err
		}
		out = append(out, f)
	}
}

func TestRoundTripEveryType(t *testing.T) {
	for _, tc := range []struct {
		name  string
		order binary.ByteOrder
	}{{"little-endian", binary.LittleEndian}, {"big-endian", binary.BigEndian}} {
		t.Run(tc.name, func(t *testing.T) {
			in := allFrames()
			b := writeAll(t, WriterOptions{ByteOrder: tc.order, NewFrameTypes: true, StartTime: 5}, in)
			hdr, out, err := readAll(t, b)
			if err != nil {
				t.Fatal(err)
			}
			if hdr.BigEndian != (tc.order == binary.BigEndian) || hdr.Version != 1 || hdr.StartTime != 5 {
				t.Errorf("header = %+v", hdr)
			}
			if len(out) != len(in) {
				t.Fatalf("read %d frames, wrote %d", len(out), len(in))
			}
			for i := range in {
				if !reflect.DeepEqual(in[i], out[i]) {
					t.Errorf("frame %d:\n wrote %#v\n read  %#v", i, in[i], out[i])
				}
			}
			if len(b)%8 != 0 {
				t.Errorf("file length %d not aligned", len(b))
			}
		})
	}
}

func TestLegacyWriterDowngradesTrace(t *testing.T) {
	b := writeAll(t, WriterOptions{}, []Frame{&Trace{FrameHeader: FrameHeader{Time: 1}, TID: 9, Entering: true, Addrs: []uint64{7}}})
	_, out, err := readAll(t, b)
	if err != nil {
		t.Fatal(err)
	}
	s, ok := out[0].(*Sample)
	if !ok || s.TID != 9 || len(s.Addrs) != 1 {
		t.Fatalf("got %#v, want a SAMPLE", out[0])
	}
	var buf bytes.Buffer
	w, _ := NewWriter(&buf)
	if err := w.WriteFrame(&DBusMessage{}); !errors.Is(err, ErrNewFrameType) {
		t.Fatalf("DBUS_MESSAGE without NewFrameTypes: err = %v", err)
	}
}

func TestLimits(t *testing.T) {
	var buf bytes.Buffer
	w, _ := NewWriter(&buf)
	max := make([]uint64, MaxSampleAddrs)
	for i := range max {
		max[i] = uint64(i)
	}
	if err := w.WriteFrame(&Sample{Addrs: max}); err != nil {
		t.Fatalf("max sample: %v", err)
	}
	if err := w.WriteFrame(&Sample{Addrs: make([]uint64, MaxSampleAddrs+1)}); !errors.Is(err, ErrFrameTooLarge) {
		t.Fatalf("oversized sample: %v", err)
	}
	if err := w.WriteFrame(&Sample{Addrs: make([]uint64, 65535)}); !errors.Is(err, ErrFrameTooLarge) {
		t.Fatalf("65535 addresses: %v", err)
	}
	data := bytes.Repeat([]byte{0xAB}, MaxFileChunkData)
	if err := w.WriteFrame(&FileChunk{Path: "p", Data: data, IsLast: true}); err != nil {
		t.Fatalf("max chunk: %v", err)
	}
	msg := strings.Repeat("m", MaxFrameLen-markFixed-1)
	if err := w.WriteFrame(&Mark{Message: msg}); err != nil {
		t.Fatalf("max mark: %v", err)
	}
	if err := w.WriteFrame(&Mark{Message: msg + "x"}); !errors.Is(err, ErrFrameTooLarge) {
		t.Fatalf("oversized mark: %v", err)
	}
	w.Close()
	_, out, err := readAll(t, buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != 3 {
		t.Fatalf("read %d frames, want 3", len(out))
	}
	if got := out[0].(*Sample).Addrs; len(got) != MaxSampleAddrs || got[MaxSampleAddrs-1] != MaxSampleAddrs-1 {
		t.Fatalf("max sample read back with %d addrs", len(got))
	}
	if !bytes.Equal(out[1].(*FileChunk).Data, data) || out[2].(*Mark).Message != msg {
		t.Fatal("max frames differ after round trip")
	}
	_ = math.MaxInt64
}

// AddSample and AddAllocation write the very bytes WriteFrame writes for
// the same frames, on their fast paths and when the buffer is full.
func TestAddMatchesWriteFrame(t *testing.T) {
	opts := WriterOptions{StartTime: 1, Clock: func() int64 { return 2 }, CaptureTime: time.Unix(1, 0)}
	var a, b bytes.Buffer
	wa, err := NewWriterWithOptions(&a, opts)
	if err != nil {
		t.Fatal(err)
	}
	wb, err := NewWriterWithOptions(&b, opts)
	if err != nil {
		t.Fatal(err)
	}
	addrs := []uint64{0x401136, 0x7f0000089aa4, 0x7f000010a3f0}
	for i := range 20000 { // several buffers' worth
		ts, cpu, pid, tid := int64(1000+i), int16(i%3-1), int32(100+i%5), int32(200+i%7)
		stack := addrs[:i%4]
		if err := wa.AddSample(ts, cpu, pid, tid, stack); err != nil {
			t.Fatal(err)
		}
		if err := wb.WriteFrame(&Sample{FrameHeader: FrameHeader{CPU: cpu, PID: pid, Time: ts}, TID: tid, Addrs: stack}); err != nil {
			t.Fatal(err)
		}
		size := int64(i % 3 * 100)
		if err := wa.AddAllocation(ts, cpu, pid, tid, 0x5000+uint64(i), size, stack); err != nil {
			t.Fatal(err)
		}
		// The general encoder, not the fast path WriteFrame shares.
		if err := wb.writeAllocation(&Allocation{FrameHeader: FrameHeader{CPU: cpu, PID: pid, Time: ts}, TID: tid, Addr: 0x5000 + uint64(i), Size: size, Addrs: stack}); err != nil {
			t.Fatal(err)
		}
	}
	if err := wa.Close(); err != nil {
		t.Fatal(err)
	}
	if err := wb.Close(); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		i := 0
		for i < min(a.Len(), b.Len()) && a.Bytes()[i] == b.Bytes()[i] {
			i++
		}
		t.Fatalf("captures differ at byte %d (%d and %d bytes)", i, a.Len(), b.Len())
	}
}
