package analyze

import (
	"math"
	"runtime/debug"

	"nsprof/internal/gcpace"
)

// Memory a report or export holds outside the Go heap, which a memory
// limit does not count: the nsprof binary's own pages (about 15 MiB
// resident) and the pages of the capture being read (up to a few MiB at
// a time).
const outsideHeap = 24 << 20

// liveShare is the live heap of a loaded capture, as a share of its
// size, that a memory limit is set for: 1.05 for a 60 s capture of a
// build (466 k samples), 1.3 for a 15 s one (120 k), measured with heap
// profiles. Captures of many processes running the same programs hold
// more (2.2 for a 60 s capture of 799 processes, most of them compilers); the limit
// then gives way (see [LimitMemory]).
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
//
// The limit gives way to a live heap that outgrows it: a limit at the
// live heap has the collector run without end (up to half the CPU, as
// the runtime caps it), and a report of a capture whose profile holds
// more than liveShare took 1.5 times as long for a fifth less memory,
// still over twice the capture. After each collection that leaves more
// than three quarters of the limit live, the limit is raised to twice
// the live heap (the size the collector's default pacing allows), never
// over the previous limit.
func LimitMemory(size int64) (restore func()) {
	limit := 2*size - outsideHeap
	if size <= 0 || size > math.MaxInt64/4 || float64(limit) < 1.25*liveShare*float64(size) {
		return func() {}
	}
	old := debug.SetMemoryLimit(-1)
	if old <= limit {
		return func() {}
	}
	g := &memGovernor{limit: limit, ceiling: old}
	debug.SetMemoryLimit(limit)
	stop := gcpace.AfterEachGC(func() { g.observe(gcpace.LiveHeap()) })
	return func() {
		stop() // observe runs no more once stop returns
		debug.SetMemoryLimit(old)
	}
}

// memGovernor raises a memory limit that the live heap outgrew (see
// [LimitMemory]), looking at the live heap once per garbage collection.
type memGovernor struct {
	limit int64
	// ceiling is the limit before LimitMemory's, never exceeded.
	ceiling int64
	// over counts the collections in a row that left more than three
	// quarters of the limit live.
	over int
}

// observe raises the limit to twice live, the live heap a collection
// left, when two collections in a row left more than three quarters of
// the limit. One is not enough: what is allocated while a collection
// marks counts as live, and a report allocates its largest tables as
// reading ends (a 60 s capture's collection then counted 109 MB live
// where 66 MB were live once those were made: the limit was raised to
// 218 MB, and the report peaked at 214 MiB instead of 2× the capture).
func (g *memGovernor) observe(live int64) {
	if live <= g.limit/4*3 {
		g.over = 0
		return
	}
	if g.over++; g.over >= 2 && g.limit < g.ceiling {
		g.limit = min(2*live, g.ceiling)
		debug.SetMemoryLimit(g.limit)
		g.over = 0
	}
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
