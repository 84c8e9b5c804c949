package record

import (
	"runtime/debug"
	"testing"
)

// TestLowerGCPercent checks that the bundle's GC percent lowers the
// default, never raises a lower one nor turns a disabled GC on, and that
// the old value comes back.
func TestLowerGCPercent(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	for _, tc := range []struct{ old, want int }{{100, 50}, {400, 50}, {20, 20}, {50, 50}, {-1, -1}} {
		debug.SetGCPercent(tc.old)
		restore := lowerGCPercent(50)
		if got := debug.SetGCPercent(0); got != tc.want {
			t.Errorf("GOGC %d: %d while lowered, want %d", tc.old, got, tc.want)
		}
		debug.SetGCPercent(tc.want)
		restore()
		if got := debug.SetGCPercent(tc.old); got != tc.old {
			t.Errorf("GOGC %d: %d restored", tc.old, got)
		}
	}
}
