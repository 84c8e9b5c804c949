package record

import (
	"encoding/binary"
	"fmt"
	"slices"
	"unsafe"

	"nsprof/capture"
)

// The memprof ring layout, as preload/memprof.h defines it. Everything is
// in the machine's byte order: writer and reader share the memory.
const (
	ringMagic      = 0x6d70736e // "nspm"
	ringVersion    = 4
	ringHeaderSize = 4096

	ringOffSize      = 8
	ringOffPID       = 16
	ringOffTID       = 20
	ringOffClosed    = 24
	ringOffHead      = 64
	ringOffTail      = 128
	ringOffLost      = 136
	ringOffUntracked = 144
	ringOffTSCTimes  = 152
	ringOffSigDrop   = 160
	ringOffCallsLost = 168
	ringOffUntimed   = 176

	// recAlloc records are ALLOCATION frames, recAllocSize bytes before
	// their addresses; recCall records are not frames. A pad record's
	// first u16 is its length with recPadBit set.
	recAlloc     = uint8(capture.TypeAllocation)
	recAllocSize = 48
	recCall      = 0x80
	recCallSize  = 64
	recPadBit    = 1
	recMinSize   = capture.FrameHeaderSize

	helloSize = 32
)

// ringCall is a MEMPROF_REC_CALL record: Count calls of the function at
// Fn from the call site Site, taking Ns nanoseconds of which SelfNs
// outside instrumented callees (both 0 for -pg code).
type ringCall struct {
	Fn, Site          uint64
	Count, Ns, SelfNs uint64
}

// RingError describes a malformed ring record: Off is its position in
// the ring's byte stream.
type RingError struct {
	Off uint64
	Msg string
}

func (e *RingError) Error() string {
	return fmt.Sprintf("memprof ring: %s at position %d", e.Msg, e.Off)
}

// frameBatch gathers the allocation frames of a drain: runs of a private
// copy of ring bytes that are whole ALLOCATION frames, written to the
// capture as they are.
type frameBatch struct {
	segs          [][]byte
	allocs, frees uint64
	last          int64 // the latest frame time
	// own holds the private copies of ring bytes the segments refer to.
	own []byte
}

func (b *frameBatch) reset() {
	clear(b.segs)
	b.segs = b.segs[:0]
	b.allocs, b.frees, b.last = 0, 0, 0
	b.own = b.own[:0]
}

// ringVisitor receives what a walk finds besides the frames themselves.
type ringVisitor interface {
	// stack is given an allocation's addresses, innermost first, when
	// they differ from the previous allocation's in the ring, and
	// returns how many of them to keep (1 to len(addrs)).
	stack(addrs []uint64, time int64) int
	// call is given a call record.
	call(time int64, c *ringCall)
}

// ringWalker walks the records of one thread's ring.
type ringWalker struct {
	// pid and tid are the host ids every frame of the ring must carry.
	pid, tid int32
	// last is the stack of the previous allocation (before trimming),
	// which most allocations repeat, and keep how many of its
	// addresses are written.
	last []uint64
	keep int
}

// maxRecord bounds a record's length (a 16-bit field).
const maxRecord = 1 << 16

// walk checks the records between positions head and tail of data, a
// ring data area whose length is a power of two, or the first of them up
// to the first record ending limit bytes or more after head (0: no
// limit), adds the allocation frames among them to b, hands call records
// and new stacks to v, and returns the position after the last record it
// consumed. A malformed record stops it with a *RingError; the records
// before it are in b.
//
// The records are read from a private copy of the ring's bytes, made
// once for each run of them between the ring's ends: the ring is shared
// with the profiled program, which could change a record after it was
// checked, and what goes into the capture must be what was checked (a
// length changed in between would have broken the capture from that
// frame on). Frames are rewritten in the copy where they must differ
// from what the thread wrote: cpu -1 and the host pid and tid where the
// thread's namespace ids differ (or the thread lied), a trimmed stack.
// The copy is b's: the segments in b stay valid until it is reset.
func (w *ringWalker) walk(data []byte, head, tail, limit uint64, b *frameBatch, v ringVisitor) (uint64, error) {
	size := uint64(len(data))
	if size < recCallSize || size&(size-1) != 0 {
		return head, &RingError{Off: head, Msg: fmt.Sprintf("data area of %d bytes is not a power of two of at least %d", size, recCallSize)}
	}
	if tail < head || tail-head > size {
		return head, &RingError{Off: head, Msg: fmt.Sprintf("tail %d out of range", tail)}
	}
	if head%8 != 0 || tail%8 != 0 {
		return head, &RingError{Off: head, Msg: "position not 8-aligned"}
	}
	if limit > 0 && limit < tail-head {
		limit += head
	} else {
		limit = tail
	}
	for head < limit {
		// The run of records up to the ring's end, to tail, or as far as
		// a record begun before limit can reach.
		off := head & mask(size)
		n := min(tail-head, size-off, limit-head+maxRecord)
		start := len(b.own)
		// Appended: the segments of earlier walks keep the array they
		// refer to when this one moves.
		b.own = append(b.own, data[off:off+n]...)
		next, err := w.walkRun(b.own[start:], head, tail, limit, size-off, b, v)
		if err != nil || next == head {
			return next, err
		}
		head = next
	}
	return head, nil
}

func mask(size uint64) uint64 { return size - 1 }

// walkRun is walk over own, a copy of the ring's bytes from position
// head on, whose ring ends at own[ringEnd].
func (w *ringWalker) walkRun(own []byte, head, tail, limit, ringEnd uint64, b *frameBatch, v ringVisitor) (uint64, error) {
	if len(own) > 0 && uintptr(unsafe.Pointer(&own[0]))%8 != 0 {
		return head, &RingError{Off: head, Msg: "copy of the data area not 8-aligned"}
	}
	ne := binary.NativeEndian
	// The run of frames being gathered: own[run:end].
	run, end := uint64(0), uint64(0)
	flush := func() {
		if end > run {
			b.segs = append(b.segs, own[run:end])
		}
	}
	defer flush() // the run before the end, or before a bad record
	wordPID := uint64(0xffff)<<16 | uint64(uint32(w.pid))<<32
	for p := uint64(0); head < limit && p < uint64(len(own)); {
		if p != end {
			flush()
			run, end = p, p
		}
		ln := uint64(ne.Uint16(own[p:]))
		if ln&recPadBit != 0 {
			ln &^= recPadBit
			if ln == 0 || ln%8 != 0 || ln > tail-head || p+ln != ringEnd {
				return head, &RingError{Off: head, Msg: fmt.Sprintf("pad record of %d bytes at offset %d of %d", ln, p, ringEnd)}
			}
			return head + ln, nil // the ring's end: the next run starts at 0
		}
		if ln < recMinSize || ln%8 != 0 || ln > tail-head || p+ln > ringEnd {
			return head, &RingError{Off: head, Msg: fmt.Sprintf("record length %d invalid", ln)}
		}
		rec := own[p : p+ln]
		time := int64(ne.Uint64(rec[8:]))
		switch kind := ne.Uint64(rec[16:]); kind {
		case recCall:
			if ln != recCallSize {
				return head, &RingError{Off: head, Msg: fmt.Sprintf("call record of %d bytes", ln)}
			}
			c := ringCall{Fn: ne.Uint64(rec[24:]), Site: ne.Uint64(rec[32:]), Count: ne.Uint64(rec[40:]), Ns: ne.Uint64(rec[48:]), SelfNs: ne.Uint64(rec[56:])}
			v.call(time, &c)
			head += ln
			p += ln
			continue
		case uint64(recAlloc):
		default:
			return head, &RingError{Off: head, Msg: fmt.Sprintf("record of type %#x (its padding included)", kind)}
		}
		if ln < recAllocSize {
			return head, &RingError{Off: head, Msg: fmt.Sprintf("allocation record of %d bytes", ln)}
		}
		na := ne.Uint32(rec[44:]) // the address count, and 16 bits of zero padding
		if ln != recAllocSize+8*uint64(na) {
			return head, &RingError{Off: head, Msg: fmt.Sprintf("record length %d does not hold %d addresses", ln, na)}
		}
		n := uint64(na)
		whole := ln
		if n > 0 {
			addrs := unsafe.Slice((*uint64)(unsafe.Pointer(&rec[recAllocSize])), n)
			if !slices.Equal(addrs, w.last) {
				w.last = append(w.last[:0], addrs...)
				w.keep = v.stack(addrs, time)
			}
			if k := uint64(w.keep); k < n {
				// Trimmed: the frame shrinks and the run ends with it.
				n = k
				ne.PutUint16(rec[44:], uint16(n))
				ln = recAllocSize + 8*n
			}
			b.allocs++
		} else if int64(ne.Uint64(rec[32:])) <= 0 {
			b.frees++ // no stack, no size: a free, as analyze reads it
		} else {
			b.allocs++
		}
		if want := uint64(ln) | wordPID; ne.Uint64(rec) != want {
			ne.PutUint64(rec, want)
		}
		if int32(ne.Uint32(rec[40:])) != w.tid {
			ne.PutUint32(rec[40:], uint32(w.tid))
		}
		b.last = max(b.last, time)
		end = p + ln
		head += whole
		p += whole
	}
	return head, nil
}

// hello is the registration message sent with a ring's memfd.
type hello struct {
	PID, TID   int32
	RingSize   uint64
	SampleSize uint64
}

// parseHello decodes a registration message.
func parseHello(b []byte) (hello, error) {
	if len(b) != helloSize {
		return hello{}, fmt.Errorf("memprof registration of %d bytes, want %d", len(b), helloSize)
	}
	if m := binary.NativeEndian.Uint32(b); m != ringMagic {
		return hello{}, fmt.Errorf("memprof registration magic %#x", m)
	}
	if v := binary.NativeEndian.Uint32(b[4:]); v != ringVersion {
		return hello{}, fmt.Errorf("memprof registration version %d, want %d (library and nsprof differ)", v, ringVersion)
	}
	return hello{
		PID:        int32(binary.NativeEndian.Uint32(b[8:])),
		TID:        int32(binary.NativeEndian.Uint32(b[12:])),
		RingSize:   binary.NativeEndian.Uint64(b[16:]),
		SampleSize: binary.NativeEndian.Uint64(b[24:]),
	}, nil
}
