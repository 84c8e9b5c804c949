package record

import (
	"sync"
	"testing"
	"time"
)

// TestResolveGate: objects are resolved side by side only while the sizes
// of those in progress stay within the budget; one larger than the
// budget is resolved alone, and every object is resolved.
func TestResolveGate(t *testing.T) {
	const budget = 10
	sizes := []int64{20, 3, 4, 5, 20, 2, 9, 1, 15, 6}
	g := newResolveGate(budget)
	var mu sync.Mutex
	var inFlight, running, maxRunning int64
	done := 0
	var wg sync.WaitGroup
	for _, n := range sizes {
		wg.Go(func() {
			g.enter(n)
			mu.Lock()
			inFlight += n
			running++
			maxRunning = max(maxRunning, running)
			if running > 1 && inFlight > budget {
				t.Errorf("%d objects of %d bytes in all resolved side by side; budget %d", running, inFlight, budget)
			}
			mu.Unlock()
			time.Sleep(2 * time.Millisecond)
			mu.Lock()
			inFlight -= n
			running--
			done++
			mu.Unlock()
			g.leave(n)
		})
	}
	wg.Wait()
	if done != len(sizes) {
		t.Errorf("%d objects resolved; want %d", done, len(sizes))
	}
	if maxRunning < 2 {
		t.Errorf("small objects were never resolved side by side")
	}
}
