// Package gcpace paces Go's garbage collector through phases of work
// whose live heap the default pacing serves badly: it calls a function
// after each collection ([AfterEachGC]), and keeps the heap from being
// collected over and over while it is small ([Floor]).
//
// The runtime offers two knobs: the GC percent (the heap grows by that
// share of what the last collection left live before the next) and the
// soft memory limit (a collection comes earlier as the limit nears). The
// first, at a low setting for a bounded peak, collects a heap of a few
// megabytes every few hundred kilobytes allocated; the second can only
// bring collections earlier. A floor is the percent chosen anew after
// each collection from the live heap, as the runtime exposes it in
// runtime/metrics.
package gcpace

import (
	"math"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
)

// sentinel is an object whose collection tells that a garbage collection
// ran: it holds a pointer so that it is never one of the tiny objects
// the allocator packs together (their cleanups run late).
type sentinel struct {
	_ *int
	_ [16]byte
}

// watcher calls f after each collection until stopped.
type watcher struct {
	mu      sync.Mutex
	stopped bool
	f       func()
}

// arm has run called after the next garbage collection.
func (w *watcher) arm() {
	runtime.AddCleanup(&sentinel{}, func(w *watcher) { w.run() }, w)
}

func (w *watcher) run() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stopped {
		return
	}
	w.f()
	w.arm()
}

// AfterEachGC calls f after each garbage collection, from the goroutine
// that runs cleanups (see [runtime.AddCleanup]), until stop is called;
// f is never running when stop returns, and never called after. f
// should return quickly: it holds up the other cleanups.
func AfterEachGC(f func()) (stop func()) {
	w := &watcher{f: f}
	w.arm()
	return func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		w.stopped = true
	}
}

// LiveHeap returns the bytes of heap the last garbage collection left
// live (the runtime's /gc/heap/live:bytes), or 0 before any collection.
func LiveHeap() int64 {
	s := [1]metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s[:])
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return int64(min(s[0].Value.Uint64(), math.MaxInt64/4))
}

// maxPercent bounds the percent a floor sets.
const maxPercent = 1 << 14

// runtimeMinHeap is the runtime's minimum heap goal at GOGC 100; the
// minimum scales with the percent (defaultHeapMinimum in the runtime's
// pacer), so that a percent raised for a heap of a few kilobytes would
// let any heap grow to hundreds of megabytes.
const runtimeMinHeap = 4 << 20

// PercentFor returns the GC percent that lets a heap of live bytes grow
// to floor bytes before the next collection, when percent would collect
// it sooner, or percent: the larger of the two. The runtime collects a
// heap at the larger of live × (1 + percent/100) and its minimum heap,
// 4 MiB × percent/100: the percent returned keeps both within floor
// (and under maxPercent). A live heap of 0 (no collection yet) gets
// percent.
func PercentFor(live, floor int64, percent int) int {
	if live <= 0 {
		return percent
	}
	if live >= floor || float64(live)*(1+float64(percent)/100) >= float64(floor) {
		return percent
	}
	p := math.Floor(100 * (float64(floor) - float64(live)) / float64(live))
	p = min(p, math.Floor(100*float64(floor)/runtimeMinHeap), maxPercent)
	return max(percent, int(p))
}

// Floor sets the GC percent to percent, unless the process's setting is
// lower already or the collector is off (GOGC=off: then nothing is
// changed), and keeps collections from coming before the heap reaches
// floor bytes: after each collection the percent is raised as far as
// that needs (see [PercentFor]), so that the heap is collected at
// max(floor, live × (1 + percent/100)). restore stops that and puts
// the process's setting back.
//
// The peak stays what percent alone gives wherever the live heap is
// large enough to be collected past floor; below that the heap grows to
// floor, not further, between collections.
func Floor(floor int64, percent int) (restore func()) {
	old := debug.SetGCPercent(percent)
	if old < 0 || old <= percent {
		debug.SetGCPercent(old)
		return func() {}
	}
	set := func() { debug.SetGCPercent(PercentFor(LiveHeap(), floor, percent)) }
	set()
	stop := AfterEachGC(set) // set runs no more once stop returns
	return func() {
		stop()
		debug.SetGCPercent(old)
	}
}
