package analyze

import (
	"math"
	"runtime/debug"
)

// Memory a report or export holds outside the Go heap, which a memory
// limit does not count: the nsprof binary's own pages (about 15 MiB
// resident) and the pages of the capture being read (up to a few MiB at
// a time).
const outsideHeap = 24 << 20

// liveShare bounds the live heap of a loaded capture, as a share of its
// size: 1.05 for a 60 s capture of a build (466 k samples), 1.3 for a
// 15 s one (120 k), measured with heap profiles.
const liveShare = 1.3

// LimitMemory sets the Go runtime's soft memory limit (see
// [debug.SetMemoryLimit]) so that the analysis of a capture of size
// bytes keeps its resident memory within twice that size, and returns
// the function that puts the previous limit back. The limit is set only
// where the profile a capture loads into leaves room under it for the
// collector to work (a quarter of the live heap, as [liveShare] bounds
// it): a limit at the live heap would have the collector run without
// end. Without a limit the heap grows to twice its live size, and the
// runtime keeps what it freed: a 71 MB capture's report peaked at
// 150–175 MB with 74 MB live. A lower limit already set (GOMEMLIMIT) is
// kept.
func LimitMemory(size int64) (restore func()) {
	limit := 2*size - outsideHeap
	if size <= 0 || size > math.MaxInt64/4 || float64(limit) < 1.25*liveShare*float64(size) {
		return func() {}
	}
	old := debug.SetMemoryLimit(-1)
	if old <= limit {
		return func() {}
	}
	debug.SetMemoryLimit(limit)
	return func() { debug.SetMemoryLimit(old) }
}

// raiseGCPercent sets the garbage collector's percent to p when the
// process's setting is lower, but never turns on a collector turned off
// (GOGC=off), and returns the function that puts the setting back.
func raiseGCPercent(p int) (restore func()) {
	old := debug.SetGCPercent(p)
	if old < 0 || old >= p {
		debug.SetGCPercent(old)
		return func() {}
	}
	return func() { debug.SetGCPercent(old) }
}
