package record

import (
	"encoding/binary"
	"testing"

	"nsprof/capture"
	"nsprof/perf"
)

// TestOffCPUSwitchInSameProcess: when the BPF program leaves out the
// switch-ins from a thread of the same process, a switch out names the
// thread coming in (next_pid) and its time is that thread's switch in;
// one of another process, or a thread never seen leaving a CPU, is not
// taken (the program writes those).
func TestOffCPUSwitchInSameProcess(t *testing.T) {
	const ms = 1_000_000
	r, w, buf := newTestRecorder(t)
	o := &offCPU{threads: make(map[int32]*switches), markNs: -1,
		nextPID: perf.TracepointField{Offset: 0, Size: 4}, bpf: &switchIns{sameProcess: true}}
	// out is a switch out of thread tid of process pid at time at,
	// handing the CPU to next.
	out := func(pid, tid, next int32, at int64) {
		o.latest = max(o.latest, at)
		o.add(r, tid, switchEvent{time: at, out: true, state: 'S', pid: pid, addrs: []uint64{0, 0, capture.ContextUser, 0x1000}})
		s := &perf.Sample{PID: uint32(pid), TID: uint32(tid), RawData: binary.NativeEndian.AppendUint32(nil, uint32(next))}
		o.switchInSameProcess(r, s, at)
	}
	b := int64(1000 * ms)
	out(1, 10, 11, b+1*ms) // 11 never seen leaving: not taken
	out(1, 11, 10, b+2*ms) // 10 comes back: [1, 2] ms
	out(1, 10, 11, b+4*ms) // 11 comes back: [2, 4] ms
	out(2, 20, 10, b+5*ms) // another process: the program writes it
	o.switchIn(r, 10, b+7*ms)
	o.sweep(r, true)
	o.flush(r, true)
	r.flushStacks(true)
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	recs, err := capture.DecodeOffCPU(o.fileWritten(t, buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	type iv struct {
		tid        int32
		start, dur int64
	}
	want := map[iv]bool{{10, b + 1*ms, 1 * ms}: true, {11, b + 2*ms, 2 * ms}: true, {10, b + 4*ms, 3 * ms}: true}
	for _, rc := range recs {
		k := iv{rc.TID, rc.Time, rc.Duration}
		if rc.TID == 20 {
			continue // still off the CPU at the end
		}
		if !want[k] {
			t.Errorf("unexpected interval %+v", k)
		}
		delete(want, k)
	}
	for k := range want {
		t.Errorf("missing interval %+v", k)
	}
	if o.unpaired != 0 {
		t.Errorf("%d unpaired, want 0", o.unpaired)
	}
}
