package analyze

import "sync/atomic"

// funcNamers are the naming goroutines' own tables (see
// [Profile.symbolize]): each names its frames' functions by numbers of
// its own, and one pass over the frames afterwards numbers the
// functions for the profile, in the order of the frames that first have
// them. That pass had hashed each location's function name and read
// each frame's location (half a million cache misses on a large capture)
// alone on one CPU, after the naming.
type funcNamers struct {
	next atomic.Int32
	ws   [maxNamers]funcNamer
}

// maxNamers bounds the goroutines that name frames: those of two rounds
// of parallelFrames.
const maxNamers = 2 * 8

// funcNamer is one naming goroutine's table of locations and functions.
type funcNamer struct {
	// locs shares the locations without inlined calls (see
	// [locations]), each with the number of its function as user and
	// as kernel code (-1: none yet).
	locs map[locationKey]sharedLoc
	// ids numbers the functions by value, listed in list.
	ids  map[Function]int32
	list []Function
	id   uint8 // its index in funcNamers.ws
}

// sharedLoc is a location of funcNamer.locs.
type sharedLoc struct {
	loc *Location
	fn  [2]int32
}

// named is what naming a frame gave it, apart from its location: its
// function, as numbered by the goroutine that named it, and the number
// of calls inlined at it and of those not named.
type named struct {
	fn int32
	// calls and unnamed are at most the frames of a lines record
	// (capture.maxSourceFrames); a symbolizer of longer chains would
	// need more bits.
	calls, unnamed uint16
	w              uint8
}

// worker returns the table of a new naming goroutine that will name
// about n frames. Its tables start at an eighth and a thirty-second of
// n (no less than 8192 and 4096 entries, no more than half and a quarter
// of n): frames repeat locations, and tables sized for half and a quarter
// of them (28 MB on a 60 s capture of a build, 407 k frames named) held
// 24 k locations and 8.5 k functions a goroutine; on the 2 s and 15 s
// captures of the same build, locations are 0.45 and 0.2 of n, functions
// 0.28 and 0.08: small tables grown to them were a tenth of naming at
// 2 s.
func (ns *funcNamers) worker(n int) *funcNamer {
	id := ns.next.Add(1) - 1
	w := &ns.ws[id]
	w.id = uint8(id)
	w.locs = make(map[locationKey]sharedLoc, min(n/2, max(n/8, 8192)))
	w.ids = make(map[Function]int32, min(n/4, max(n/32, 4096)))
	return w
}

// name returns a location equal to loc, shared with the equal ones w
// made when it has no inlined calls, and what naming a frame (kernel or
// not) at it gave, for w's number in ns.
func (ns *funcNamers) name(w *funcNamer, loc Location, kernel bool) (*Location, named) {
	n := named{w: w.id}
	if len(loc.Inline) > 0 {
		l := new(loc)
		for j := range l.Inline {
			if l.Inline[j].unnamed {
				n.unnamed++
			}
		}
		n.calls = uint16(len(l.Inline))
		n.fn = w.number(Function{Name: l.Function, DSO: l.DSO, Kernel: kernel})
		return l, n
	}
	k := locationKey{loc.Function, loc.DSO, loc.File, loc.Line}
	e, ok := w.locs[k]
	if !ok {
		e = sharedLoc{loc: new(loc), fn: [2]int32{-1, -1}}
	}
	if e.fn[b2i(kernel)] < 0 {
		e.fn[b2i(kernel)] = w.number(Function{Name: loc.Function, DSO: loc.DSO, Kernel: kernel})
		ok = false
	}
	if !ok {
		w.locs[k] = e
	}
	n.fn = e.fn[b2i(kernel)]
	return e.loc, n
}

// number returns w's number of fn.
func (w *funcNamer) number(fn Function) int32 {
	id, ok := w.ids[fn]
	if !ok {
		id = int32(len(w.list))
		w.ids[fn] = id
		w.list = append(w.list, fn)
	}
	return id
}

// functions returns the number of functions the goroutines numbered,
// each counting those it named: a bound of their number; 0 for a nil ns.
func (ns *funcNamers) functions() int {
	if ns == nil {
		return 0
	}
	n := 0
	for w := range ns.next.Load() {
		n += len(ns.ws[w].list)
	}
	return n
}

// numbering returns, for each goroutine's functions, the profile's id of
// each (-1 until the frames give them one).
func (ns *funcNamers) numbering() [][]FuncID {
	ids := make([][]FuncID, ns.next.Load())
	for w := range ids {
		ids[w] = make([]FuncID, len(ns.ws[w].list))
		for i := range ids[w] {
			ids[w][i] = -1
		}
	}
	return ids
}

// funcOf returns the profile's id of the function n names, adding it to
// funcs when it is new.
func (ns *funcNamers) funcOf(n named, ids [][]FuncID, funcs map[Function]FuncID, list *[]Function) FuncID {
	id := &ids[n.w][n.fn]
	if *id < 0 {
		*id = internFunc(funcs, list, ns.ws[n.w].list[n.fn])
	}
	return *id
}
