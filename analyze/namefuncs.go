package analyze

import "sync/atomic"

// funcNamers are the naming goroutines' own tables (see
// [Profile.symbolize]): each names its frames' functions by numbers of
// its own, and one pass over the frames afterwards numbers the
// functions for the profile, in the order of the frames that first have
// them. That pass had hashed each location's function name and deref-
// erenced each frame's location (half a million cache misses on a large
// capture) alone on one CPU, after the naming.
type funcNamers struct {
	next atomic.Int32
	ws   [maxNamers]funcNamer
}

// maxNamers bounds the goroutines that name frames: those of two rounds
// of parallelFrames.
const maxNamers = 2 * 8

// funcNamer is one naming goroutine's table of locations and functions.
type funcNamer struct {
	locs locations
	// fns numbers each location's function, by location and kind
	// (user, kernel); ids the functions by value, listed in list.
	fns  [2]map[*Location]int32
	ids  map[Function]int32
	list []Function
	id   uint8 // its index in funcNamers.ws
}

// named is what naming a frame gave it, apart from its location: its
// function, as numbered by the goroutine that named it, and the number
// of calls inlined at it and of those not named.
type named struct {
	fn      int32
	calls   uint16
	unnamed uint8
	w       uint8
}

// worker returns the table of a new naming goroutine.
func (ns *funcNamers) worker() *funcNamer {
	id := ns.next.Add(1) - 1
	w := &ns.ws[id]
	w.id = uint8(id)
	w.locs = locations{}
	w.fns = [2]map[*Location]int32{make(map[*Location]int32), make(map[*Location]int32)}
	w.ids = make(map[Function]int32)
	return w
}

// name shares loc with the equal ones w made and tells what naming a
// frame (kernel or not) at it gave, for w's number in ns.
func (ns *funcNamers) name(w *funcNamer, loc Location, kernel bool) (*Location, named) {
	l := w.locs.of(loc)
	n := named{w: w.id}
	for j := range l.Inline {
		if l.Inline[j].unnamed {
			n.unnamed++
		}
	}
	n.calls = uint16(len(l.Inline)) // at most capture.maxSourceFrames
	m := w.fns[b2i(kernel)]
	id, ok := m[l]
	if !ok {
		fn := Function{Name: l.Function, DSO: l.DSO, Kernel: kernel}
		if id, ok = w.ids[fn]; !ok {
			id = int32(len(w.list))
			w.ids[fn] = id
			w.list = append(w.list, fn)
		}
		m[l] = id
	}
	n.fn = id
	return l, n
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
