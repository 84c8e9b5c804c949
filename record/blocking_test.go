package record

import (
	"encoding/binary"
	"runtime"
	"testing"

	"nsprof/perf"
)

// TestSyscallNames: the generated table names the x86-64 calls by their
// numbers, and a number it lacks gets a name of its own.
func TestSyscallNames(t *testing.T) {
	if runtime.GOARCH != "amd64" {
		t.Skip("the table is x86-64's")
	}
	for nr, want := range map[int64]string{0: "read", 1: "write", 15: "rt_sigreturn", 35: "nanosleep",
		202: "futex", 230: "clock_nanosleep", 231: "exit_group", 435: "clone3", 9999: "syscall_9999", -1: "syscall_-1"} {
		if got := syscallName(nr); got != want {
			t.Errorf("syscallName(%d) = %q, want %q", nr, got, want)
		}
	}
}

// TestBlockingPairing: entries and exits pair per thread; an exit
// without an entry is a call begun before the recording for a thread not
// seen yet and a lost entry otherwise; an entry after an entry, an exit
// of another call, and an entry read after a later exit are lost halves;
// rt_sigreturn's exit (number -1) pairs; exit_group waits for no exit
// and ends the calls of every thread of its process.
func TestBlockingPairing(t *testing.T) {
	enter := &perf.Tracepoint{Name: sysEnterTracepoint, ID: 1, Fields: map[string]perf.TracepointField{
		"id": {Offset: 8, Size: 8, Signed: true}, "args": {Offset: 16, Size: 48}}}
	exit := &perf.Tracepoint{Name: sysExitTracepoint, ID: 2, Fields: map[string]perf.TracepointField{
		"id": {Offset: 8, Size: 8, Signed: true}, "ret": {Offset: 16, Size: 8, Signed: true}}}
	b := &blocking{enter: enter, exit: exit, threshold: 1 << 62, self: -1,
		threads: map[int32]*pendingCall{}, markers: map[string]uint64{}, fdPaths: map[int32]map[int32]string{}}
	rec := func(tp uint16, tid uint32, nr int64, time uint64) *perf.Record {
		raw := make([]byte, 64)
		binary.NativeEndian.PutUint16(raw, tp)
		binary.NativeEndian.PutUint64(raw[8:], uint64(nr))
		return &perf.Record{Type: perf.RecordSample, Sample: perf.Sample{PID: 7, TID: tid, Time: time, RawData: raw}}
	}
	steps := []struct {
		tp                     uint16
		tid                    uint32
		nr                     int64
		time                   uint64
		before, unpaired, seen uint64
	}{
		{2, 1, 0, 10, 1, 0, 1},    // exit of a call entered before
		{1, 1, 15, 20, 1, 0, 2},   // rt_sigreturn
		{2, 1, -1, 30, 1, 0, 3},   // its exit: paired
		{1, 1, 0, 40, 1, 0, 4},    // read
		{1, 1, 1, 50, 1, 1, 5},    // write: the read's exit was lost
		{2, 1, 0, 60, 1, 2, 6},    // an exit of read: not the write's
		{1, 1, 0, 55, 1, 3, 7},    // an entry read after a later exit
		{1, 1, 0, 70, 1, 3, 8},    // read
		{2, 1, 0, 80, 1, 3, 9},    // paired
		{2, 2, 0, 80, 2, 3, 10},   // another thread, entered before
		{1, 1, 202, 85, 2, 3, 11}, // futex, never to return:
		{1, 2, 231, 90, 2, 3, 12}, // exit_group ends the process
	}
	for i, s := range steps {
		if !b.handle(nil, rec(s.tp, s.tid, s.nr, s.time)) {
			t.Fatalf("step %d: not taken for a system call", i)
		}
		if b.before != s.before || b.unpaired != s.unpaired || b.seen != s.seen {
			t.Fatalf("step %d: before %d unpaired %d seen %d, want %d %d %d", i, b.before, b.unpaired, b.seen, s.before, s.unpaired, s.seen)
		}
	}
	if len(b.threads) != 0 {
		t.Errorf("after exit_group, threads %v of the process are still waited for", b.threads)
	}
	if b.handle(nil, rec(3, 1, 0, 100)) {
		t.Errorf("another tracepoint taken for a system call")
	}
}
