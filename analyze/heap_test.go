package analyze

import (
	"testing"
	"time"

	"nsprof/capture"
)

// TestHeapAddressReused: a block whose free the capture lacks ends when
// its address is allocated again, whether or not the view selects the
// new block, and that end is no free of the view's. A view selecting
// the first block only (its time) sees it live until the second
// allocation, not until the second block's free.
func TestHeapAddressReused(t *testing.T) {
	buf, w := appCapture(t, 1000)
	alloc := func(at int64, size int64, pc uint64) {
		must(t, w.WriteFrame(&capture.Allocation{FrameHeader: capture.FrameHeader{PID: 100, Time: testStart + at}, TID: 100,
			Addr: 0x7f0000, Size: size, Addrs: []uint64{pc, 0x400100}}))
	}
	alloc(10, 100, 0x400000)
	alloc(20, 50, 0x400010) // 0x7f0000 again: the first one's free was lost
	must(t, w.WriteFrame(&capture.Allocation{FrameHeader: capture.FrameHeader{PID: 100, Time: testStart + 30}, TID: 100, Addr: 0x7f0000}))
	must(t, w.Close())
	p, err := LoadBytes(buf.Bytes(), LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	vi, err := p.ValueIndex("alloc_space")
	if err != nil {
		t.Fatal(err)
	}
	all, err := p.View(ViewOptions{Value: vi})
	if err != nil {
		t.Fatal(err)
	}
	h := all.Heap()
	if h.Allocs != 2 || h.Frees != 1 || h.Peak != 100 || h.PeakTime != testStart+10 || h.LeakBytes != 0 {
		t.Errorf("whole heap %+v: want 2 allocations, 1 free, peak 100 at +10, no leak", h)
	}
	series, changes := all.LiveHeap(0, 0)
	want := []CounterPoint{{testStart + 10, 100}, {testStart + 20, 50}, {testStart + 30, 0}}
	if len(series) != len(want) || changes != 4 {
		t.Fatalf("whole heap series %v (%d changes), want %v", series, changes, want)
	}
	for i := range want {
		if series[i] != want[i] {
			t.Errorf("whole heap point %d: %v, want %v", i, series[i], want[i])
		}
	}
	first, err := p.View(ViewOptions{Value: vi, Filter: Filter{Until: 15 * time.Nanosecond}})
	if err != nil {
		t.Fatal(err)
	}
	series, _ = first.LiveHeap(0, 0)
	want = []CounterPoint{{testStart + 10, 100}, {testStart + 20, 0}}
	if len(series) != len(want) || series[0] != want[0] || series[1] != want[1] {
		t.Errorf("first block's series %v, want %v", series, want)
	}
	if h := first.Heap(); h.Allocs != 1 || h.Frees != 0 || h.Peak != 100 {
		t.Errorf("first block's heap %+v: want 1 allocation, no free, peak 100", h)
	}
}
