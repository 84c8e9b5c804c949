package testcaptures

import (
	"bytes"
	"cmp"
	"slices"
	"testing"

	"nsprof/capture"
)

// Heap is what a plain replay of a capture's ALLOCATION frames gives:
// the reference the profile model's allocation columns are checked
// against.
type Heap struct {
	Allocs, Frees          int64
	Bytes, Objects         int64
	LeakBytes, LeakObjects int64
	TempBytes, TempObjects int64
	Peak, PeakTime         int64
}

// ReplayHeap replays the ALLOCATION frames of the processes pids (all
// when none) of capture data in time order, the simple way: an
// allocation is a frame with a size or a stack, a free one with neither;
// a free matches the live block of its process at its address; a block
// is temporary when its thread frees it before allocating anything else;
// blocks live at the end are leaked. Every allocation counts one object
// (for captures recorded without sampling).
func ReplayHeap(tb testing.TB, data []byte, pids ...int32) Heap {
	tb.Helper()
	cr, err := capture.NewReader(bytes.NewReader(data))
	if err != nil {
		tb.Fatal(err)
	}
	var allocs []*capture.Allocation
	for {
		f, err := cr.Next()
		if err != nil {
			break
		}
		if a, ok := f.(*capture.Allocation); ok && (len(pids) == 0 || slices.Contains(pids, a.PID)) {
			allocs = append(allocs, a)
		}
	}
	slices.SortStableFunc(allocs, func(x, y *capture.Allocation) int { return cmp.Compare(x.Time, y.Time) })
	type block struct {
		pid  int32
		addr uint64
	}
	var h Heap
	live := map[block]int64{}
	last := map[int32]block{}
	var cur int64
	for _, a := range allocs {
		k := block{a.PID, a.Addr}
		if a.Size == 0 && len(a.Addrs) == 0 {
			h.Frees++
			size, ok := live[k]
			if !ok {
				continue
			}
			cur -= size
			delete(live, k)
			if l, ok := last[a.TID]; ok && l == k {
				h.TempObjects++
				h.TempBytes += size
			}
			delete(last, a.TID)
			continue
		}
		h.Allocs++
		h.Objects++
		h.Bytes += a.Size
		cur -= live[k]
		live[k] = a.Size
		last[a.TID] = k
		cur += a.Size
		if cur > h.Peak {
			h.Peak, h.PeakTime = cur, a.Time
		}
	}
	for _, size := range live {
		h.LeakObjects++
		h.LeakBytes += size
	}
	return h
}
