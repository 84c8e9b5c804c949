package record

import "testing"

func TestClonePairsEitherOrder(t *testing.T) {
	var c clonePairs
	// FORK first, then the return value, as when both sit in one ring.
	if _, _, ok := c.fork(10, 500); ok {
		t.Fatal("paired without a return value")
	}
	if h, n, ok := c.returned(10, 2); !ok || h != 500 || n != 2 {
		t.Fatalf("pair %d %d %t", h, n, ok)
	}
	// Return values first (another CPU's ring read earlier), two in a row.
	c.returned(11, 3)
	c.returned(11, 4)
	if h, n, ok := c.fork(11, 501); !ok || h != 501 || n != 3 {
		t.Fatalf("pair %d %d %t", h, n, ok)
	}
	if h, n, ok := c.fork(11, 502); !ok || h != 502 || n != 4 {
		t.Fatalf("pair %d %d %t", h, n, ok)
	}
	// Pairs are per parent thread.
	c.fork(12, 600)
	if _, _, ok := c.returned(13, 7); ok {
		t.Fatal("paired across threads")
	}
	c.exited(12)
	if _, _, ok := c.returned(12, 8); ok {
		t.Fatal("paired with a forgotten fork")
	}
	for i := 0; i < 2*maxPendingClones; i++ {
		c.fork(14, 1000+i)
	}
	if len(c.forks[14]) != maxPendingClones {
		t.Fatalf("%d pending forks kept", len(c.forks[14]))
	}
}
