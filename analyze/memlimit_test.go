package analyze

import (
	"math"
	"runtime"
	"runtime/debug"
	"testing"
	"time"
)

// TestLimitMemory: the limit is twice a large capture's size less what
// lies outside the heap, put back afterwards; none for a capture whose
// profile would leave the collector no room, and a lower limit is kept.
func TestLimitMemory(t *testing.T) {
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(math.MaxInt64))
	const big = 1 << 30
	restore := LimitMemory(big)
	if got, want := debug.SetMemoryLimit(-1), int64(2*big-outsideHeap); got != want {
		t.Errorf("limit for %d bytes: %d, want %d", big, got, want)
	}
	restore()
	if got := debug.SetMemoryLimit(-1); got != math.MaxInt64 {
		t.Errorf("limit after restore: %d, want none", got)
	}
	for _, size := range []int64{0, -1, 24 << 20, 60 << 20, math.MaxInt64} {
		LimitMemory(size)()
		if got := debug.SetMemoryLimit(-1); got != math.MaxInt64 {
			t.Errorf("limit for %d bytes: %d, want none", size, got)
		}
	}
	debug.SetMemoryLimit(big)
	LimitMemory(big)
	if got := debug.SetMemoryLimit(-1); got != big {
		t.Errorf("a lower limit of %d became %d", big, got)
	}
}

// TestRaiseGCPercent: a lower setting is raised and put back; a higher
// one and a collector turned off are left as they are.
func TestRaiseGCPercent(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	for _, c := range []struct{ was, during int }{{100, 400}, {50, 400}, {800, 800}, {400, 400}, {-1, -1}} {
		debug.SetGCPercent(c.was)
		restore := raiseGCPercent(400)
		if got := debug.SetGCPercent(c.during); got != c.during {
			t.Errorf("GOGC %d: %d while raised, want %d", c.was, got, c.during)
		}
		restore()
		if got := debug.SetGCPercent(c.was); got != c.was {
			t.Errorf("GOGC %d: %d after, want it back", c.was, got)
		}
	}
}

// TestLimitMemoryGivesWay: a live heap over three quarters of the limit
// has it raised to twice the live heap after a collection; once put
// back, the limit is left alone.
func TestLimitMemoryGivesWay(t *testing.T) {
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(math.MaxInt64))
	const size = 100 << 20 // a limit of 176 MiB
	restore := LimitMemory(size)
	limit := debug.SetMemoryLimit(-1)
	if limit != 2*size-outsideHeap {
		t.Fatalf("limit %d, want %d", limit, 2*size-outsideHeap)
	}
	live := make([][]byte, 0, 160)
	for range 160 { // 160 MiB, live until the end
		live = append(live, make([]byte, 1<<20))
	}
	raised := false
	for range 50 {
		runtime.GC()
		time.Sleep(10 * time.Millisecond) // the cleanup's goroutine
		if debug.SetMemoryLimit(-1) > 2*size-outsideHeap {
			raised = true
			break
		}
	}
	if !raised {
		t.Errorf("limit %d with 160 MiB live, want it raised above %d", debug.SetMemoryLimit(-1), 2*size-outsideHeap)
	}
	restore()
	runtime.GC()
	time.Sleep(10 * time.Millisecond)
	if got := debug.SetMemoryLimit(-1); got != math.MaxInt64 {
		t.Errorf("limit after restore: %d, want none", got)
	}
	runtime.KeepAlive(live)
}

// TestMemGovernorTwoInARow: the limit is raised only when two
// collections in a row leave more than three quarters of it live, to
// twice the last live heap, never over the ceiling.
func TestMemGovernorTwoInARow(t *testing.T) {
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(math.MaxInt64))
	const limit = 100 << 20
	g := &memGovernor{limit: limit, ceiling: 300 << 20}
	debug.SetMemoryLimit(limit)
	over, under := int64(80<<20), int64(70<<20)
	for i, live := range []int64{over, under, over, under} {
		g.observe(live)
		if g.limit != limit || debug.SetMemoryLimit(-1) != limit {
			t.Fatalf("after collection %d (%d MiB live): limit %d MiB, want it kept", i, live>>20, g.limit>>20)
		}
	}
	g.observe(over)
	g.observe(over + 1<<20)
	if want := 2 * (over + 1<<20); g.limit != want || debug.SetMemoryLimit(-1) != want {
		t.Errorf("after two collections over: limit %d MiB, want %d MiB", g.limit>>20, want>>20)
	}
	g.observe(200 << 20)
	g.observe(200 << 20)
	if g.limit != 300<<20 {
		t.Errorf("limit %d MiB, want the ceiling", g.limit>>20)
	}
}
