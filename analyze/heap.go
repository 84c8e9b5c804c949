package analyze

import (
	"fmt"
	"math"
	"strconv"
)

// HeapStats sums up what the allocations a view selects did over the
// recording: the totals of their value columns, and what only replaying
// them in time order tells, the peak of live bytes and the frees.
type HeapStats struct {
	// Allocs counts the allocation events the view selects; Frees the
	// frees of its processes and threads within its time range (a free
	// has no stack, so a DSO filter or focus does not apply to it).
	Allocs, Frees int64
	// Bytes and Objects were allocated (alloc_space, alloc_objects); in
	// a sampled capture (SampleBytes > 0) they are unbiased estimates,
	// objects rounded per allocation.
	Bytes, Objects int64
	// LeakBytes and LeakObjects were still live at the end (inuse_space,
	// inuse_objects): allocated while recording, never freed.
	LeakBytes, LeakObjects int64
	// TempBytes and TempObjects were temporary (temp_space,
	// temp_objects).
	TempBytes, TempObjects int64
	// Peak is the largest sum of the live bytes of the selected
	// allocations, and PeakTime when it was reached, on the capture
	// clock.
	Peak, PeakTime int64
	// SampleBytes is the recording's sampling interval, 0 when every
	// allocation was recorded.
	SampleBytes int64
	// HasLost says whether the recording counted the events it could not
	// record (nsprof record --memprof does); Lost counts those dropped
	// because a ring stayed full, SignalDropped those of signal handlers
	// that found no room. Both are for the whole capture.
	HasLost             bool
	Lost, SignalDropped int64
}

// HasAllocations reports whether the capture had ALLOCATION frames: then
// the profile has the allocation sample types.
func (p *Profile) HasAllocations() bool { return p.allocCol > 0 }

// SampleBytes returns the allocation sampling interval of the recording
// in bytes: about one allocation recorded per SampleBytes allocated; 0
// when every allocation was recorded.
func (p *Profile) SampleBytes() int64 { return p.sampleBytes }

// Heap returns the heap statistics of the view's allocations; the zero
// HeapStats (but for the lost counts) when it has none.
func (v *View) Heap() HeapStats {
	p := v.Profile
	h := HeapStats{SampleBytes: p.sampleBytes, HasLost: p.memLost.has, Lost: p.memLost.lost, SignalDropped: p.memLost.signal}
	if p.allocCol == 0 {
		return h
	}
	a := p.allocCol
	selected := make([]bool, len(p.rows.kind))
	sums := make([]int64, len(p.SampleTypes))
	for i := range v.Samples {
		s := &v.Samples[i]
		if p.rows.kind[s.Row]&rowKind != rowAlloc {
			continue
		}
		selected[s.Row] = true
		h.Allocs++
		p.addValues(s, sums)
	}
	h.Objects, h.Bytes = sums[a], sums[a+1]
	h.LeakObjects, h.LeakBytes = sums[a+2], sums[a+3]
	h.TempObjects, h.TempBytes = sums[a+4], sums[a+5]
	v.replayHeap(selected, func(at, live int64) {
		if live > h.Peak {
			h.Peak, h.PeakTime = live, at
		}
	}, func() { h.Frees++ })
	return h
}

// LiveHeap returns the live bytes of the view's allocations after each
// allocation or free that changed them, in time order: the heap the
// selected allocations kept (a memory track, as Sysprof draws one), and
// how many changes there were. With width > 0 each bucket of width ns
// from start keeps only its smallest and largest value (in their order),
// so that the series stays as small as a drawing needs: a --memprof
// capture has millions of changes. It is nil for a view without
// allocations. In a sampled capture (SampleBytes) the sizes are those of
// the blocks recorded.
func (v *View) LiveHeap(start, width int64) (points []CounterPoint, changes int) {
	p := v.Profile
	if p.allocCol == 0 {
		return nil, 0
	}
	selected := make([]bool, len(p.rows.kind))
	some := false
	for i := range v.Samples {
		if r := v.Samples[i].Row; p.rows.kind[r]&rowKind == rowAlloc {
			selected[r], some = true, true
		}
	}
	if !some {
		return nil, 0
	}
	// lo and hi are the current bucket's smallest and largest values,
	// written when the bucket ends.
	var (
		lo, hi CounterPoint
		bucket int64
		open   bool
	)
	flush := func() {
		if !open {
			return
		}
		a, b := lo, hi
		if b.Time < a.Time {
			a, b = b, a
		}
		points = append(points, a)
		if b != a {
			points = append(points, b)
		}
	}
	v.replayHeap(selected, func(at, live int64) {
		changes++
		pt := CounterPoint{Time: at, Value: float64(live)}
		if width <= 0 {
			if n := len(points); n > 0 && points[n-1].Time == at {
				points[n-1].Value = pt.Value // the last change at one time stands
			} else {
				points = append(points, pt)
			}
			return
		}
		if b := (at - start) / width; !open || b != bucket {
			flush()
			lo, hi, bucket, open = pt, pt, b, true
			return
		}
		if pt.Value < lo.Value {
			lo = pt
		}
		if pt.Value > hi.Value {
			hi = pt
		}
	}, nil)
	flush()
	return points, changes
}

// heapEvents are the allocations and frees in time order, as
// [View.replayHeap] replays them: an allocation by its row of values,
// whose size it has, a free by the row of the block it freed, matched
// once when loading. They take 4 bytes an allocation and 24 a free (the
// 40-byte frames read were 160 MB for 2 M allocations and 2 M frees).
type heapEvents struct {
	// order lists the events: an allocation's row (>= 0), or ^i for
	// free i.
	order []int32
	// The frees' times, processes and threads, and the rows of the
	// blocks they freed (-1: a block allocated before the recording).
	freeTime              []int64
	freePID, freeTID, row []int32
	// unseen are the frees the capture does not have: an allocation at
	// the address of a live block whose free was not seen ended it.
	unseen map[int32]bool
	// samples are the loaded profile's, by row: a view's are its own.
	samples []Sample
}

// newHeapEvents returns the heap events of allocs, allocations of
// samples, with room for them.
func newHeapEvents(allocs *allocEvents, samples []Sample) *heapEvents {
	frees := 0
	for _, c := range allocs.chunks {
		for i := range c {
			if c[i].sample < 0 {
				frees++
			}
		}
	}
	return &heapEvents{
		samples:  samples,
		order:    make([]int32, 0, allocs.len()),
		freeTime: make([]int64, 0, frees),
		freePID:  make([]int32, 0, frees),
		freeTID:  make([]int32, 0, frees),
		row:      make([]int32, 0, frees),
	}
}

// free appends a free at e's time, process and thread of the block of
// row (-1: none recorded); unseen says the capture does not have it.
func (h *heapEvents) free(e *allocEvent, row int32, unseen bool) {
	i := int32(len(h.row))
	if unseen {
		if h.unseen == nil {
			h.unseen = make(map[int32]bool)
		}
		h.unseen[i] = true
	}
	h.order = append(h.order, ^i)
	h.freeTime = append(h.freeTime, e.time)
	h.freePID = append(h.freePID, e.pid)
	h.freeTID = append(h.freeTID, e.tid)
	h.row = append(h.row, row)
}

// replayHeap replays the capture's allocations and frees in time order,
// keeping the selected allocations' blocks (by sample row) live until
// freed: changed gets the time and the live bytes after each allocation
// or free that changed them; freed, when set, is told of each free of
// the view's processes and threads within its range. selected is
// changed: a block's entry is cleared when it is freed.
func (v *View) replayHeap(selected []bool, changed func(at, live int64), freed func()) {
	p := v.Profile
	free, err := p.matcher(v.filter)
	if err != nil { // the view was made with this filter: it compiles
		free = func(*Sample) bool { return false }
	}
	h, size := p.heap, p.rows.first
	var cur int64
	for _, ref := range h.order {
		if ref >= 0 {
			if selected[ref] {
				cur += size[ref]
				changed(h.samples[ref].Time, cur)
			}
			continue
		}
		i := ^ref
		at := h.freeTime[i]
		if freed != nil && !h.unseen[i] && free(&Sample{Time: at, PID: h.freePID[i], TID: h.freeTID[i], Stack: -1}) {
			freed()
		}
		if r := h.row[i]; r >= 0 && selected[r] {
			selected[r] = false
			cur -= size[r]
			changed(at, cur)
		}
	}
}

// WeighBy returns the view weighing its stacks by sample type t instead,
// a type of the same kind of measurement ([Profile.Kind]) as the view's:
// the same samples on the same stacks.
func (v *View) WeighBy(t int) (*View, error) {
	kind := v.Kind(v.value)
	ok := false
	for _, k := range kind {
		ok = ok || k == t
	}
	if !ok {
		return nil, fmt.Errorf("view: sample type %d is not of the kind of type %d", t, v.value)
	}
	w := *v
	p := *v.Profile
	p.value = t
	w.Profile = &p
	return &w, nil
}

type pidAddr struct {
	pid  int32
	addr uint64
}

// parseCount adds the count in a metadata value to n: one value per
// recording, and a capture may join several (nsprof cat).
func parseCount(v string, n int64) int64 {
	c, err := strconv.ParseInt(v, 10, 64)
	if err != nil || c < 0 {
		return n
	}
	return n + c
}

// sampledObjects estimates how many blocks one sample of weight w stands
// for when one byte in n was sampled: the block's size s solves
// w = s / (1 - exp(-s/n)), and the sample stands for w/s blocks.
func sampledObjects(w, n int64) float64 {
	fw, fn := float64(w), float64(n)
	if fw <= fn {
		return fw // tiny blocks: w ≈ n + s/2
	}
	lo, hi := 0.0, fw
	for range 60 {
		mid := (lo + hi) / 2
		if mid/(-math.Expm1(-mid/fn)) < fw {
			lo = mid
		} else {
			hi = mid
		}
	}
	s := (lo + hi) / 2
	if s < 1 {
		s = 1
	}
	return fw / s
}
