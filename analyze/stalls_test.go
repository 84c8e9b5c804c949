package analyze

import (
	"testing"

	"nsprof/capture"
)

// TestStalls flags the probed calls over the threshold, longest first,
// finds their thread in the message, and counts per group and name;
// other groups' marks are left alone.
func TestStalls(t *testing.T) {
	mk := func(group, name string, time, dur int64, pid int32, msg string) capture.Mark {
		return capture.Mark{FrameHeader: capture.FrameHeader{Time: time, PID: pid}, Duration: dur, Group: group, Name: name, Message: msg}
	}
	marks := []capture.Mark{
		mk(capture.MainLoopGroup, "g_main_context_dispatch", 10, 1_000_000, 7, ""),
		mk(capture.MainLoopGroup, "g_main_context_dispatch", 20, 100_000_000, 7, ""),
		mk(capture.MainLoopGroup, "g_main_context_dispatch", 30, 16_000_000, 7, ""), // not over
		mk(capture.SpanGroup, "work", 40, 30_000_000, 7, "tid 9"),
		mk(capture.SpanGroup, "work", 50, 200_000_000, 7, "tid 9 (still running when the recording stopped)"),
		mk(capture.BlockingGroup, "read", 60, 500_000_000, 7, "fd 3"),
		mk("gtk", "frame", 70, 500_000_000, 7, ""),
	}
	st, counts := Stalls(marks, DefaultStall)
	if len(st) != 3 {
		t.Fatalf("stalls %+v, want 3", st)
	}
	for i, want := range []struct {
		time int64
		tid  int32
	}{{50, 9}, {20, 7}, {40, 9}} {
		if st[i].Time != want.time || st[i].TID != want.tid {
			t.Errorf("stall %d: time %d tid %d, want %d %d", i, st[i].Time, st[i].TID, want.time, want.tid)
		}
	}
	want := []StallStats{{capture.MainLoopGroup, "g_main_context_dispatch", 3, 1}, {capture.SpanGroup, "work", 2, 2}}
	if len(counts) != 2 || counts[0] != want[0] || counts[1] != want[1] {
		t.Errorf("counts %+v, want %+v", counts, want)
	}
}
