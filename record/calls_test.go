package record

import (
	"encoding/binary"
	"errors"
	"testing"
)

// putCall writes a MEMPROF_REC_CALL record of ln bytes at the start of
// data, as preload/calls.c does.
func putCall(data []byte, ln uint16, time int64, c ringCall) {
	binary.NativeEndian.PutUint64(data, uint64(ln)|0xffff<<16|1<<32)
	binary.NativeEndian.PutUint64(data[8:], uint64(time))
	binary.NativeEndian.PutUint64(data[16:], recCall)
	for i, v := range []uint64{c.Fn, c.Site, c.Count, c.Ns, c.SelfNs} {
		binary.NativeEndian.PutUint64(data[24+8*i:], v)
	}
}

// callVisitor collects call records.
type callVisitor struct {
	keepAll
	calls []ringCall
	times []int64
}

func (v *callVisitor) call(time int64, c *ringCall) {
	v.calls = append(v.calls, *c)
	v.times = append(v.times, time)
}

// TestRingWalkCalls: a call record between allocations is handed over
// whole and splits the run of frames around it; one of another length
// is a *RingError at its position.
func TestRingWalkCalls(t *testing.T) {
	data := ringData(512)
	tail := putRecord(data, 0, 1, 1, 1, 0x1000, 10, []uint64{0x400000})
	want := ringCall{Fn: 0x401000, Site: 0x402034, Count: 1000000, Ns: 5e6, SelfNs: 4e6}
	putCall(data[tail:], recCallSize, 7, want)
	tail += recCallSize
	tail = putRecord(data, tail, 1, 1, 8, 0x1000, 0, nil)
	v := &callVisitor{keepAll: keepAll{t: t}}
	var b frameBatch
	g := ringWalker{pid: 1, tid: 1}
	next, err := g.walk(data, 0, tail, 0, &b, v)
	if err != nil || next != tail {
		t.Fatalf("walk: next %d of %d, %v", next, tail, err)
	}
	if len(v.calls) != 1 || v.calls[0] != want || v.times[0] != 7 {
		t.Errorf("calls %+v at %v; want %+v at 7", v.calls, v.times, want)
	}
	if len(b.segs) != 2 || b.allocs != 1 || b.frees != 1 {
		t.Errorf("%d runs, %d allocations, %d frees; want 2, 1, 1", len(b.segs), b.allocs, b.frees)
	}

	bad := ringData(512)
	putCall(bad, recCallSize+8, 1, want)
	b.reset()
	_, err = g.walk(bad, 0, recCallSize+8, 0, &b, v)
	var re *RingError
	if !errors.As(err, &re) || re.Off != 0 {
		t.Errorf("call record of %d bytes: %v", recCallSize+8, err)
	}
}
