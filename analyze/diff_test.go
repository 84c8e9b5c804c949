package analyze

import (
	"fmt"
	"testing"
)

// Functions are joined by name, DSO and kernel flag; one sampled on one
// side only has zeros on the other; the largest change comes first, of
// the self share or, byTotal, of the total share.
func TestDiffTop(t *testing.T) {
	base := []FuncStat{
		{Name: "hot", DSO: "prog", Self: 60, Total: 60, SelfPercent: 60, TotalPercent: 60},
		{Name: "main", DSO: "prog", Self: 0, Total: 100, SelfPercent: 0, TotalPercent: 100},
		{Name: "gone", DSO: "prog", Self: 30, Total: 30, SelfPercent: 30, TotalPercent: 30},
		{Name: "read", DSO: "[kernel]", Kernel: true, Self: 10, Total: 10, SelfPercent: 10, TotalPercent: 10},
	}
	cur := []FuncStat{
		{Name: "hot", DSO: "prog", Self: 50, Total: 50, SelfPercent: 50, TotalPercent: 50},
		{Name: "main", DSO: "prog", Self: 0, Total: 100, SelfPercent: 0, TotalPercent: 100},
		{Name: "new", DSO: "prog", Self: 35, Total: 45, SelfPercent: 35, TotalPercent: 45},
		{Name: "read", DSO: "[kernel]", Kernel: true, Self: 15, Total: 15, SelfPercent: 15, TotalPercent: 15},
		{Name: "read", DSO: "libc.so.6", Self: 0, Total: 5, SelfPercent: 0, TotalPercent: 5},
	}
	line := func(d FuncDiff) string {
		return fmt.Sprintf("%s/%s %v %d→%d %+.0f %d→%d %+.0f", d.Name, d.DSO, d.Kernel, d.BaseSelf, d.Self, d.SelfDelta, d.BaseTotal, d.Total, d.TotalDelta)
	}
	for _, c := range []struct {
		byTotal bool
		want    []string
	}{
		{false, []string{
			"new/prog false 0→35 +35 0→45 +45",
			"gone/prog false 30→0 -30 30→0 -30",
			"hot/prog false 60→50 -10 60→50 -10",
			"read/[kernel] true 10→15 +5 10→15 +5",
			"main/prog false 0→0 +0 100→100 +0",
			"read/libc.so.6 false 0→0 +0 0→5 +5",
		}},
		{true, []string{
			"new/prog false 0→35 +35 0→45 +45",
			"gone/prog false 30→0 -30 30→0 -30",
			"hot/prog false 60→50 -10 60→50 -10",
			"read/[kernel] true 10→15 +5 10→15 +5",
			"read/libc.so.6 false 0→0 +0 0→5 +5",
			"main/prog false 0→0 +0 100→100 +0",
		}},
	} {
		got := DiffTop(base, cur, c.byTotal)
		if len(got) != len(c.want) {
			t.Fatalf("byTotal %v: %d functions, want %d: %v", c.byTotal, len(got), len(c.want), got)
		}
		for i := range got {
			if s := line(got[i]); s != c.want[i] {
				t.Errorf("byTotal %v: %d: %s, want %s", c.byTotal, i, s, c.want[i])
			}
		}
	}
}
