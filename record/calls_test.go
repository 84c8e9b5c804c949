package record

import (
	"encoding/binary"
	"errors"
	"testing"
)

// putCall writes a MEMPROF_REC_CALL record of ln bytes at the start of
// data, as preload/calls.c does.
func putCall(data []byte, ln uint32, time int64, c ringCall) {
	binary.NativeEndian.PutUint32(data, ln)
	binary.NativeEndian.PutUint16(data[4:], recCall)
	binary.NativeEndian.PutUint16(data[6:], 0)
	binary.NativeEndian.PutUint64(data[8:], uint64(time))
	for i, v := range []uint64{c.Fn, c.Site, c.Count, c.Ns, c.SelfNs} {
		binary.NativeEndian.PutUint64(data[16+8*i:], v)
	}
}

// TestRingDecodeCalls: a call record between allocations is decoded
// whole; one of another length is a *RingError at its position.
func TestRingDecodeCalls(t *testing.T) {
	data := make([]byte, 512)
	tail := putRecord(data, 0, recAlloc, 1, 0x1000, 10, []uint64{0x400000})
	want := ringCall{Fn: 0x401000, Site: 0x402034, Count: 1000000, Ns: 5e6, SelfNs: 4e6}
	putCall(data[tail:], recCallSize, 7, want)
	tail += recCallSize
	tail = putRecord(data, tail, recFree, 8, 0x1000, 0, nil)
	var d ringDecoder
	var got []ringCall
	var kinds []string
	next, err := d.decode(data, 0, tail, func(r *memRecord) {
		switch {
		case r.Call != nil:
			if r.Time != 7 {
				t.Errorf("call record time %d, want 7", r.Time)
			}
			got = append(got, *r.Call)
			kinds = append(kinds, "call")
		case r.Free:
			kinds = append(kinds, "free")
		default:
			kinds = append(kinds, "alloc")
		}
	})
	if err != nil || next != tail {
		t.Fatalf("decode: next %d of %d, %v", next, tail, err)
	}
	if len(got) != 1 || got[0] != want || len(kinds) != 3 || kinds[1] != "call" {
		t.Errorf("records %v, calls %+v; want alloc, call %+v, free", kinds, got, want)
	}

	bad := make([]byte, 512)
	putCall(bad, recCallSize+8, 1, want)
	_, err = d.decode(bad, 0, recCallSize+8, func(*memRecord) { t.Error("bad record delivered") })
	var re *RingError
	if !errors.As(err, &re) || re.Off != 0 {
		t.Errorf("call record of %d bytes: %v", recCallSize+8, err)
	}
}
