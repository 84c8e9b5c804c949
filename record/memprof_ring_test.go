package record

import (
	"bytes"
	"encoding/binary"
	"errors"
	"slices"
	"testing"
	"unsafe"

	"nsprof/capture"
)

// ringData returns a zeroed, 8-aligned ring data area of n bytes.
func ringData(n int) []byte {
	m := make([]uint64, n/8)
	return unsafe.Slice((*byte)(unsafe.Pointer(&m[0])), n)
}

// putRecord writes an allocation (a free when size is 0 and addrs
// empty) at position pos of data as the preload does, with a pad record
// first when it would not fit before the end; it returns the new tail.
func putRecord(data []byte, pos uint64, pid, tid int32, time int64, addr uint64, size int64, addrs []uint64) uint64 {
	mask := uint64(len(data) - 1)
	ln := uint64(recAllocSize + 8*len(addrs))
	off := pos & mask
	if off+ln > uint64(len(data)) {
		pad := uint64(len(data)) - off
		binary.NativeEndian.PutUint16(data[off:], uint16(pad|recPadBit))
		pos += pad
		off = 0
	}
	b := data[off:]
	binary.NativeEndian.PutUint64(b, ln|0xffff<<16|uint64(uint32(pid))<<32)
	binary.NativeEndian.PutUint64(b[8:], uint64(time))
	binary.NativeEndian.PutUint64(b[16:], uint64(recAlloc))
	binary.NativeEndian.PutUint64(b[24:], addr)
	binary.NativeEndian.PutUint64(b[32:], uint64(size))
	binary.NativeEndian.PutUint64(b[40:], uint64(uint32(tid))|uint64(len(addrs))<<32)
	for i, a := range addrs {
		binary.NativeEndian.PutUint64(b[recAllocSize+8*i:], a)
	}
	return pos + ln
}

// keepAll is a ringVisitor that keeps every address, refuses call
// records, and counts the stacks it is shown.
type keepAll struct {
	t      *testing.T
	stacks int
	trim   int // keep at most trim addresses, when > 0
}

func (k *keepAll) stack(addrs []uint64, _ int64) int {
	k.stacks++
	if k.trim > 0 && len(addrs) > k.trim {
		return k.trim
	}
	return len(addrs)
}

func (k *keepAll) call(int64, *ringCall) { k.t.Error("call record delivered") }

// writeFrames writes a batch's frames with a fresh Writer and returns the
// capture's ALLOCATION frames.
func writeFrames(t *testing.T, b *frameBatch) []*capture.Allocation {
	t.Helper()
	var buf bytes.Buffer
	w, err := capture.NewWriter(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.AddAllocationFrames(b.segs, int(b.allocs+b.frees), b.last); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if got, want := w.Count(capture.TypeAllocation), b.allocs+b.frees; got != want {
		t.Errorf("Writer counts %d ALLOCATION frames, want %d", got, want)
	}
	r, err := capture.NewReader(&buf)
	if err != nil {
		t.Fatal(err)
	}
	var out []*capture.Allocation
	for {
		f, err := r.Next()
		if err != nil {
			break
		}
		if a, ok := f.(*capture.Allocation); ok {
			out = append(out, a)
		}
	}
	return out
}

// TestRingWalkCopies: the frames a walk checked are written as they were
// checked, whatever the program that shares the ring writes over its
// records afterwards (a length changed there would break the capture from
// that frame on).
func TestRingWalkCopies(t *testing.T) {
	data := ringData(1024)
	g := ringWalker{pid: 4000, tid: 4001}
	var tail uint64
	for e := range 6 {
		tail = putRecord(data, tail, 1, 2, int64(e), uint64(0x1000+e), int64(e+1), []uint64{0x400000, 0x400100})
	}
	var b frameBatch
	if next, err := g.walk(data, 0, tail, 0, &b, &keepAll{t: t}); err != nil || next != tail {
		t.Fatalf("walk to %d of %d: %v", next, tail, err)
	}
	for i := range data {
		data[i] = 0xff
	}
	got := writeFrames(t, &b)
	if len(got) != 6 {
		t.Fatalf("%d frames written, want 6", len(got))
	}
	for e, a := range got {
		if a.Time != int64(e) || a.PID != 4000 || a.TID != 4001 || a.Addr != uint64(0x1000+e) || a.Size != int64(e+1) || len(a.Addrs) != 2 {
			t.Errorf("frame %d: %+v", e, a)
		}
	}
}

// TestRingWalkWraps: over several laps of a ring, with pad records at
// its end, walked a piece at a time, every allocation and free reaches the capture as the frame it
// was, with the host pid and tid the walker was given in place of the
// thread's namespace ids, and the stacks it had.
func TestRingWalkWraps(t *testing.T) {
	data := ringData(512)
	g := ringWalker{pid: 4000, tid: 4001}
	v := &keepAll{t: t}
	var head, tail uint64
	var got []*capture.Allocation
	var b frameBatch
	for lap := range 8 {
		b.reset()
		for i := range 5 {
			e := lap*5 + i
			if e%2 == 0 {
				tail = putRecord(data, tail, 1, 2, int64(e), uint64(0x1000+e), int64(e+1), []uint64{0x400000 + uint64(e/4), 0x400100})
			} else {
				tail = putRecord(data, tail, 1, 2, int64(e), uint64(0x1000+e-1), 0, nil)
			}
		}
		// In pieces of at least 100 bytes, as a drain walks memprofChunk
		// at a time, ending at a record's end.
		for head < tail {
			next, err := g.walk(data, head, tail, 100, &b, v)
			if err != nil || next <= head || (next < tail && next-head < 100) || next-head >= 100+recAllocSize+16+256 {
				t.Fatalf("lap %d: walk from %d stopped at %d of %d: %v", lap, head, next, tail, err)
			}
			head = next
		}
		if b.last != int64(lap*5+4) {
			t.Errorf("lap %d: last time %d", lap, b.last)
		}
		got = append(got, writeFrames(t, &b)...)
	}
	if len(got) != 40 {
		t.Fatalf("got %d frames, want 40", len(got))
	}
	for e, a := range got {
		want := &capture.Allocation{FrameHeader: capture.FrameHeader{CPU: -1, PID: 4000, Time: int64(e)}, TID: 4001, Addr: uint64(0x1000 + e)}
		if e%2 == 0 {
			want.Size = int64(e + 1)
			want.Addrs = []uint64{0x400000 + uint64(e/4), 0x400100}
		} else {
			want.Addr--
		}
		if a.FrameHeader != want.FrameHeader || a.TID != want.TID || a.Addr != want.Addr || a.Size != want.Size || !slices.Equal(a.Addrs, want.Addrs) {
			t.Fatalf("frame %d: %+v, want %+v", e, a, want)
		}
	}
	// A stack is shown when it differs from the previous allocation's.
	if v.stacks != 10 {
		t.Errorf("%d stacks shown, want 10", v.stacks)
	}
}

// TestRingWalkTrims: a stack the visitor trims is written trimmed, and
// the frames after it still follow.
func TestRingWalkTrims(t *testing.T) {
	data := ringData(1024)
	var tail uint64
	tail = putRecord(data, tail, 7, 7, 1, 0x1000, 10, []uint64{0x401000, 0x402000, 0x10})
	tail = putRecord(data, tail, 7, 7, 2, 0x1000, 0, nil)
	tail = putRecord(data, tail, 7, 7, 3, 0x2000, 20, []uint64{0x401000, 0x402000, 0x10})
	var b frameBatch
	g := ringWalker{pid: 7, tid: 7}
	if next, err := g.walk(data, 0, tail, 0, &b, &keepAll{t: t, trim: 2}); err != nil || next != tail {
		t.Fatalf("walk: %d of %d, %v", next, tail, err)
	}
	got := writeFrames(t, &b)
	if len(got) != 3 || b.allocs != 2 || b.frees != 1 {
		t.Fatalf("%d frames, %d allocations, %d frees", len(got), b.allocs, b.frees)
	}
	for _, i := range []int{0, 2} {
		if !slices.Equal(got[i].Addrs, []uint64{0x401000, 0x402000}) {
			t.Errorf("frame %d: stack %#x", i, got[i].Addrs)
		}
	}
	if got[1].Size != 0 || got[1].Addr != 0x1000 || len(got[1].Addrs) != 0 || got[2].Size != 20 {
		t.Errorf("frames %+v %+v", got[1], got[2])
	}
}

// TestRingWalkMatchesAddAllocation: the frames a walk gathers are, byte
// for byte, what Writer.AddAllocation writes for the same events, so a
// capture written from the rings reads as one written event by event.
func TestRingWalkMatchesAddAllocation(t *testing.T) {
	data := ringData(4096)
	var tail uint64
	var want bytes.Buffer
	ww, err := capture.NewWriterWithOptions(&want, capture.WriterOptions{StartTime: 1})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		addrs := []uint64{0x401000 + uint64(i), 0x402000}[:i%3]
		size := int64(i * 16)
		tail = putRecord(data, tail, 3, 4, int64(100+i), uint64(0x7f0000+i), size, addrs)
		if err := ww.AddAllocation(int64(100+i), -1, 3000, 3001, uint64(0x7f0000+i), size, addrs); err != nil {
			t.Fatal(err)
		}
	}
	ww.Close()
	var b frameBatch
	g := ringWalker{pid: 3000, tid: 3001}
	if _, err := g.walk(data, 0, tail, 0, &b, &keepAll{t: t}); err != nil {
		t.Fatal(err)
	}
	var got bytes.Buffer
	gw, err := capture.NewWriterWithOptions(&got, capture.WriterOptions{StartTime: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := gw.AddAllocationFrames(b.segs, int(b.allocs+b.frees), b.last); err != nil {
		t.Fatal(err)
	}
	gw.Close()
	h := capture.HeaderSize
	if !bytes.Equal(got.Bytes()[h:], want.Bytes()[h:]) {
		t.Errorf("frames differ:\nrings %x\nwant  %x", got.Bytes()[h:], want.Bytes()[h:])
	}
}

func TestRingWalkMalformed(t *testing.T) {
	alloc := func(b []byte) { putRecord(b, 0, 1, 1, 1, 0x1000, 8, []uint64{0x401000}) }
	for _, tc := range []struct {
		name  string
		fill  func(b []byte)
		tail  uint64
		dsize int
	}{
		{"zero length", func(b []byte) {}, 48, 128},
		{"length past tail", alloc, 48, 128},
		{"unaligned length", func(b []byte) { alloc(b); binary.NativeEndian.PutUint16(b, 58) }, 56, 128},
		{"addrs do not fit", func(b []byte) { alloc(b); binary.NativeEndian.PutUint16(b[44:], 3) }, 56, 128},
		{"padding after the count", func(b []byte) { alloc(b); b[46] = 1 }, 56, 128},
		{"padding after the type", func(b []byte) { alloc(b); b[19] = 1 }, 56, 128},
		{"unknown type", func(b []byte) { alloc(b); b[16] = 2 }, 56, 128},
		{"short allocation", func(b []byte) { alloc(b); binary.NativeEndian.PutUint16(b, 40) }, 40, 128},
		{"call record of 72 bytes", func(b []byte) { putCall(b, 72, 1, ringCall{}) }, 72, 128},
		{"pad not at the end", func(b []byte) { binary.NativeEndian.PutUint16(b, 16|recPadBit) }, 16, 128},
		{"tail beyond ring", func(b []byte) {}, 256, 128},
		{"not a power of two", func(b []byte) {}, 48, 96},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := ringData(tc.dsize)
			tc.fill(data)
			var b frameBatch
			g := ringWalker{pid: 1, tid: 1}
			head, err := g.walk(data, 0, tc.tail, 0, &b, &keepAll{t: t})
			var re *RingError
			if !errors.As(err, &re) || head != 0 || len(b.segs) != 0 {
				t.Fatalf("got head %d, %d runs, err %v; want a RingError at 0", head, len(b.segs), err)
			}
		})
	}
	// The records before a bad one are kept.
	data := ringData(256)
	tail := putRecord(data, 0, 1, 1, 1, 0x1000, 8, []uint64{0x401000})
	var b frameBatch
	g := ringWalker{pid: 1, tid: 1}
	head, err := g.walk(data, 0, tail+48, 0, &b, &keepAll{t: t})
	if err == nil || head != tail || len(b.segs) != 1 || len(b.segs[0]) != int(tail) {
		t.Errorf("head %d, runs %d, err %v; want the first record kept and an error at %d", head, len(b.segs), err, tail)
	}
}

func TestParseHello(t *testing.T) {
	b := make([]byte, helloSize)
	binary.NativeEndian.PutUint32(b, ringMagic)
	binary.NativeEndian.PutUint32(b[4:], ringVersion)
	binary.NativeEndian.PutUint32(b[8:], 7)
	binary.NativeEndian.PutUint32(b[12:], 9)
	binary.NativeEndian.PutUint64(b[16:], 4096+8192)
	h, err := parseHello(b)
	if err != nil || h.PID != 7 || h.TID != 9 || h.RingSize != 12288 {
		t.Fatalf("got %+v, %v", h, err)
	}
	if checkRingSize(h.RingSize) != nil || checkRingSize(4096+100) == nil || checkRingSize(0) == nil {
		t.Fatal("checkRingSize")
	}
	binary.NativeEndian.PutUint32(b[4:], ringVersion-1)
	if _, err := parseHello(b); err == nil {
		t.Fatal("wrong version accepted")
	}
	if _, err := parseHello(b[:8]); err == nil {
		t.Fatal("short message accepted")
	}
}

// fuzzVisitor accepts every call record and keeps every address.
type fuzzVisitor struct{}

func (fuzzVisitor) stack(addrs []uint64, _ int64) int { return len(addrs) }
func (fuzzVisitor) call(int64, *ringCall)             {}

// FuzzRingWalk feeds arbitrary ring contents and positions to the
// walker: it must never panic, never read past tail, consume all records
// up to tail (or limit) when it reports no error, and gather only frames
// that a capture Reader reads back as ALLOCATION frames.
func FuzzRingWalk(f *testing.F) {
	data := ringData(256)
	tail := putRecord(data, 0, 1, 1, 1, 0x1000, 24, []uint64{0x401000, 0x402000})
	tail = putRecord(data, tail, 1, 1, 2, 0x1000, 0, nil)
	f.Add(data, uint64(0), tail, uint64(0))
	wrap := ringData(128)
	t2 := putRecord(wrap, 48, 1, 1, 3, 0x2000, 0, nil)
	t2 = putRecord(wrap, t2, 1, 1, 4, 0x3000, 8, []uint64{1})
	f.Add(wrap, uint64(48), t2, uint64(8))
	f.Fuzz(func(t *testing.T, raw []byte, head, tail, limit uint64) {
		data := ringData(max(8, len(raw)&^7))
		copy(data, raw)
		var b frameBatch
		g := ringWalker{pid: 5, tid: 6}
		next, err := g.walk(data, head, tail, limit, &b, fuzzVisitor{})
		if next < head || next > max(head, tail) {
			t.Fatalf("position %d outside [%d, %d]", next, head, tail)
		}
		if err == nil && next != tail && (limit == 0 || next-head < limit) {
			t.Fatalf("no error but stopped at %d of %d (limit %d)", next, tail, limit)
		}
		if err != nil {
			var re *RingError
			if !errors.As(err, &re) || re.Off != next {
				t.Fatalf("error %v does not name position %d", err, next)
			}
		}
		if got := writeFrames(t, &b); len(got) != int(b.allocs+b.frees) {
			t.Fatalf("%d frames read back, %d gathered", len(got), b.allocs+b.frees)
		}
	})
}
