package gcpace

import (
	"runtime"
	"runtime/debug"
	"sync/atomic"
	"testing"
	"time"
)

func TestPercentFor(t *testing.T) {
	const mb = 1 << 20
	for _, tc := range []struct {
		live, floor int64
		percent     int
		want        int
	}{
		{0, 24 * mb, 50, 50},                          // no collection yet
		{4 * mb, 24 * mb, 50, 500},                    // 4 MB live grows to 24
		{12 * mb, 24 * mb, 50, 100},                   // 12 MB grows to 24
		{16 * mb, 24 * mb, 50, 50},                    // 16 × 1.5 reaches the floor
		{40 * mb, 24 * mb, 50, 50},                    // over the floor
		{1024, 24 * mb, 50, 600},                      // the runtime's minimum heap: 4 MiB × 6
		{1024, 1 << 50, 50, maxPercent},               // bounded
		{23 * mb, 24 * mb, 100, 100},                  // never lower than percent
		{8 * mb, 16 * mb, 200, 200},                   // percent reaches past the floor
		{10 * mb, 25 * mb, 20, 150},                   // 10 MB grows to 25
		{3 * mb, 10*mb + 1, 0, 233},                   // rounded down
		{-5, 24 * mb, 50, 50},                         // no reading
		{1 << 61, 1 << 62, 50, 100},                   // large heaps
		{24 * mb, 24*mb + 1024, 0, 0},                 // a hair under the floor
		{2 * mb, 2 * mb, 50, 50},                      // at the floor
		{mb, 0, 50, 50},                               // no floor
		{mb, 24 * mb, maxPercent * 2, maxPercent * 2}, // a large percent kept
	} {
		if got := PercentFor(tc.live, tc.floor, tc.percent); got != tc.want {
			t.Errorf("PercentFor(%d, %d, %d) = %d, want %d", tc.live, tc.floor, tc.percent, got, tc.want)
		}
	}
}

// TestAfterEachGC checks that f runs after collections, and not once stop
// has returned.
func TestAfterEachGC(t *testing.T) {
	var n atomic.Int32
	stop := AfterEachGC(func() { n.Add(1) })
	for i := 0; i < 50 && n.Load() < 3; i++ {
		runtime.GC()
		time.Sleep(time.Millisecond)
	}
	if n.Load() < 3 {
		stop()
		t.Fatalf("f ran %d times after 50 collections, want at least 3", n.Load())
	}
	stop()
	after := n.Load()
	for range 5 {
		runtime.GC()
		time.Sleep(time.Millisecond)
	}
	if got := n.Load(); got != after {
		t.Errorf("f ran %d times after stop returned", got-after)
	}
}

// sink keeps allocations from being optimized away.
var sink []byte

// collections returns how many garbage collections allocating total
// bytes, in pieces of 64 KiB kept for no longer than the next piece,
// takes.
func collections(total int) uint32 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range total / (64 << 10) {
		sink = make([]byte, 64<<10)
	}
	runtime.ReadMemStats(&after)
	return after.NumGC - before.NumGC
}

// TestFloor checks that a floor spares a small heap most collections,
// that the percent is the one asked for once the live heap is past the
// floor, and that the process's setting comes back, or is kept when it
// is lower or off.
func TestFloor(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	runtime.GC()
	const total = 256 << 20
	debug.SetGCPercent(50)
	without := collections(total)
	debug.SetGCPercent(100)
	restore := Floor(64<<20, 50)
	with := collections(total)
	restore()
	t.Logf("%d collections under the floor, %d at GOGC 50", with, without)
	// The live heap is a few MB: at GOGC 50 a collection every few MB
	// (the runtime's 4 MB minimum goal), under the floor one every 64.
	if with == 0 || with*4 > without {
		t.Errorf("%d collections for %d MB allocated under a 64 MB floor, %d at GOGC 50: want at most a quarter", with, total>>20, without)
	}
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("GOGC %d after restore, want 100", got)
	}

	// Past the floor, the percent asked for.
	keep := make([]byte, 48<<20)
	for i := range keep {
		keep[i] = 1
	}
	restore = Floor(8<<20, 50)
	runtime.GC()
	runtime.GC() // the cleanup of the first sets the percent; the second's may run late
	if got := debug.SetGCPercent(50); got != 50 {
		t.Errorf("GOGC %d with 48 MB live over an 8 MB floor, want 50", got)
	}
	restore()
	runtime.KeepAlive(keep)

	for _, old := range []int{20, 50, -1} {
		debug.SetGCPercent(old)
		restore := Floor(64<<20, 50)
		runtime.GC()
		if got := debug.SetGCPercent(old); got != old {
			t.Errorf("GOGC %d under Floor(64 MB, 50), want %d kept", got, old)
		}
		restore()
		if got := debug.SetGCPercent(100); got != old {
			t.Errorf("GOGC %d after restore, want %d", got, old)
		}
	}
}
