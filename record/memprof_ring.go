package record

import (
	"encoding/binary"
	"fmt"
	"unsafe"
)

// The memprof ring layout, as preload/memprof.h defines it. Everything is
// in the machine's byte order: writer and reader share the memory.
const (
	ringMagic      = 0x6d70736e // "nspm"
	ringVersion    = 3
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

	recHeaderSize = 32
	recAlloc      = 1
	recFree       = 2
	recPad        = 3
	recCall       = 4
	recCallSize   = 64

	helloSize = 32
)

// memRecord is one decoded ring record: an allocation of Size bytes at
// Addr (in sampling mode Size is the block's unbiased weight), a free
// of Addr (Size 0, no stack), or the calls of an arc (Call).
type memRecord struct {
	Free bool
	// Call, when set, is the calls of one arc (preload/calls.c); the
	// other fields but Time are then unset.
	Call *ringCall
	Time int64
	Addr uint64
	Size int64
	// Addrs are return addresses, innermost first; the slice is reused
	// by the next record.
	Addrs []uint64
}

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

// ringDecoder decodes records from a ring's data area.
type ringDecoder struct {
	addrs []uint64
}

// decode calls fn for every record between positions head and tail of
// data, a ring data area whose length is a power of two, and returns the
// position after the last record it consumed. A malformed record stops it
// with a *RingError; the records before it were delivered. fn must not
// keep rec.Addrs.
func (d *ringDecoder) decode(data []byte, head, tail uint64, fn func(rec *memRecord)) (uint64, error) {
	size := uint64(len(data))
	if size < recHeaderSize || size&(size-1) != 0 {
		return head, &RingError{Off: head, Msg: fmt.Sprintf("data area of %d bytes is not a power of two of at least %d", size, recHeaderSize)}
	}
	if tail < head || tail-head > size {
		return head, &RingError{Off: head, Msg: fmt.Sprintf("tail %d out of range", tail)}
	}
	if head%8 != 0 || tail%8 != 0 {
		return head, &RingError{Off: head, Msg: "position not 8-aligned"}
	}
	mask := size - 1
	var rec memRecord
	var call ringCall
	for head < tail {
		off := head & mask
		ln := uint64(binary.NativeEndian.Uint32(data[off:]))
		kind := binary.NativeEndian.Uint16(data[off+4:])
		if ln < 8 || ln%8 != 0 || ln > tail-head || off+ln > size {
			return head, &RingError{Off: head, Msg: fmt.Sprintf("record length %d invalid", ln)}
		}
		if kind == recPad {
			head += ln
			continue
		}
		if ln < recHeaderSize {
			return head, &RingError{Off: head, Msg: fmt.Sprintf("record length %d shorter than its header", ln)}
		}
		if kind == recCall {
			if ln != recCallSize || binary.NativeEndian.Uint16(data[off+6:]) != 0 {
				return head, &RingError{Off: head, Msg: fmt.Sprintf("call record of %d bytes", ln)}
			}
			b := data[off : off+ln]
			call = ringCall{
				Fn: binary.NativeEndian.Uint64(b[16:]), Site: binary.NativeEndian.Uint64(b[24:]),
				Count: binary.NativeEndian.Uint64(b[32:]), Ns: binary.NativeEndian.Uint64(b[40:]), SelfNs: binary.NativeEndian.Uint64(b[48:]),
			}
			fn(&memRecord{Time: int64(binary.NativeEndian.Uint64(b[8:])), Call: &call})
			head += ln
			continue
		}
		n := uint64(binary.NativeEndian.Uint16(data[off+6:]))
		if ln != recHeaderSize+8*n {
			return head, &RingError{Off: head, Msg: fmt.Sprintf("record length %d does not hold %d addresses", ln, n)}
		}
		switch kind {
		case recAlloc:
			rec.Free = false
		case recFree:
			if n != 0 {
				return head, &RingError{Off: head, Msg: fmt.Sprintf("free record with %d addresses", n)}
			}
			rec.Free = true
		default:
			return head, &RingError{Off: head, Msg: fmt.Sprintf("unknown record kind %d", kind)}
		}
		b := data[off : off+ln]
		rec.Time = int64(binary.NativeEndian.Uint64(b[8:]))
		rec.Addr = binary.NativeEndian.Uint64(b[16:])
		rec.Size = int64(binary.NativeEndian.Uint64(b[24:]))
		if rec.Free {
			rec.Size = 0
		}
		rec.Addrs = d.stack(b[recHeaderSize:], n)
		fn(&rec)
		head += ln
	}
	return head, nil
}

// stack returns the n addresses at the start of b. They are read in
// place, the ring being in the machine's byte order, when b is 8-aligned
// (always, for rings mapped at page boundaries): copying them showed as a
// tenth of the recorder's time under a malloc-heavy program. The writer
// cannot change them meanwhile: the records between head and tail are
// the reader's until head moves past them.
func (d *ringDecoder) stack(b []byte, n uint64) []uint64 {
	if n == 0 {
		return nil
	}
	if uintptr(unsafe.Pointer(&b[0]))%8 == 0 {
		return unsafe.Slice((*uint64)(unsafe.Pointer(&b[0])), n)
	}
	d.addrs = d.addrs[:0]
	for i := uint64(0); i < n; i++ {
		d.addrs = append(d.addrs, binary.NativeEndian.Uint64(b[8*i:]))
	}
	return d.addrs
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
