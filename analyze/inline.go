package analyze

import (
	"runtime"
	"sync"
)

// inlineFrames gives a view frames of their own for the functions inlined
// at the profile's frames: one frame per inlined call, at the same
// address, named by its [Location.Inline] entry.
type inlineFrames struct {
	// frames and funcs are the profile's, then the inlined calls'.
	frames []Frame
	funcs  []Function
	// chains holds, for each frame of the profile with inlined calls,
	// its frames leaf first: the innermost inlined call, ..., the
	// outermost, then the frame itself; those of frame i are
	// chains[at[i]:at[i+1]], empty for a frame without inlined calls.
	// (A map by frame was most of a view's time on a large capture.)
	chains []FrameID
	at     []int32
}

// lazyInline makes a profile's [inlineFrames] once, when a view first
// needs them.
type lazyInline struct {
	once sync.Once
	x    *inlineFrames
	// room is the profile's frames with room after them for the inlined
	// calls' (the capacity of the slice); nil when there is none, or it
	// was used.
	room []Frame
	// with lists the frames with inlined calls, in order, as naming
	// found them (listed says it did). Looking at every frame's
	// location for its calls missed the processor's caches a frame.
	with   []int32
	listed bool
}

// inlineFrames returns the inlined calls of p's frames, or nil when no
// frame has any: made once, after the frames were last named, and
// shared by every view.
func (p *Profile) inlineFrames() *inlineFrames {
	if p.inline == nil {
		p.inline = &lazyInline{}
	}
	l := p.inline
	l.once.Do(func() {
		with := l.with
		if !l.listed {
			with = framesWithInline(p.Frames)
		}
		l.x = newInlineFrames(p, l.room, with)
		l.room, l.with = nil, nil
	})
	return l.x
}

// reserveInline makes room after p's frames for the frames of the calls
// inlined at them (see [lazyInline.room]) when there is not enough: a
// capture whose lines describe files rather than processes does not say
// before its frames are named how many of them have inlined calls. The
// frames are copied once, now, rather than when a view first needs them,
// with more of a report's memory in use.
func (p *Profile) reserveInline() {
	calls := p.inlineCalls
	l := p.inline
	if calls == 0 || l == nil || l.x != nil {
		return
	}
	if len(l.room) == len(p.Frames) && cap(l.room)-len(l.room) >= calls && (len(l.room) == 0 || &l.room[0] == &p.Frames[0]) {
		return
	}
	n := len(p.Frames)
	all := append(make([]Frame, 0, n+calls), p.Frames...)
	p.Frames = all[:n:n]
	l.room = all
}

// framesWithInline returns the indexes of the frames with inlined calls.
func framesWithInline(frames []Frame) []int32 {
	var with []int32
	for i := range frames {
		if len(frames[i].Loc.Inline) > 0 {
			with = append(with, int32(i))
		}
	}
	return with
}

// newInlineFrames returns the inlined calls of p's frames, or nil when no
// frame has any; with lists the frames that have some.
//
// The frames with calls are taken in parts, side by side (this was most
// of a large report's serial time after loading: 23 ms of 40 at 15 s).
// Each part finds its calls' functions among p's and numbers those that
// are not by its own numbers; the parts' own functions are then numbered
// for the view in the parts' order, as one pass over the frames in order
// would number them, and each part writes its frames.
func newInlineFrames(p *Profile, room []Frame, with []int32) *inlineFrames {
	// The frames are copied once, to a slice with room for the inlined
	// calls: appending to a full one of a million frames copied them
	// over and over.
	// The calls are counted once, each part's first being those before
	// it. A part has a thousand frames or more: the 2 s capture of the
	// report bench has 3.7 k, on which one part was the last step of
	// its report run on one CPU.
	parts := make([]inlinePart, min(runtime.GOMAXPROCS(0), 8, len(with)>>10+1))
	calls := 0
	for k := range parts {
		pt := &parts[k]
		pt.lo, pt.hi = len(with)*k/len(parts), len(with)*(k+1)/len(parts)
		pt.calls = calls
		for _, i := range with[pt.lo:pt.hi] {
			calls += len(p.Frames[i].Loc.Inline)
		}
	}
	if calls == 0 {
		return nil
	}
	frames := room
	if len(room) != len(p.Frames) || cap(room)-len(room) < calls || len(room) == 0 || &room[0] != &p.Frames[0] {
		frames = append(make([]Frame, 0, len(p.Frames)+calls), p.Frames...)
	}
	x := &inlineFrames{
		frames: frames[:len(p.Frames)+calls],
		funcs:  p.Funcs[:len(p.Funcs):len(p.Funcs)], // appends copy
		chains: make([]FrameID, calls+len(with)),
		at:     make([]int32, len(p.Frames)+1),
	}
	// Sized for the profile's functions: the calls' own functions, added
	// after the parts ran, are a few thousand, where sizing for one a
	// call (235 k calls at 60 s) made a map of 37 MB for 11 k functions.
	funcs := make(map[Function]FuncID, len(p.Funcs))
	for id, fn := range p.Funcs {
		funcs[fn] = FuncID(id)
	}
	var wg sync.WaitGroup
	for k := range parts {
		wg.Go(func() { parts[k].funcs(p, with, funcs) })
	}
	wg.Wait()
	for k := range parts {
		pt := &parts[k]
		pt.global = make([]FuncID, len(pt.own))
		for j, fn := range pt.own {
			pt.global[j] = internFunc(funcs, &x.funcs, fn)
		}
	}
	for k := range parts {
		wg.Go(func() { parts[k].write(p, x, with) })
	}
	wg.Wait()
	return x
}

// inlinePart is one part of the frames with inlined calls (see
// [newInlineFrames]): with[lo:hi].
type inlinePart struct {
	lo, hi int
	// calls counts the inlined calls of the frames before the part's.
	calls int
	// ids holds the functions of the part's calls, in order: a
	// function of the profile's by its id, one of the part's own by
	// -1 - its index in own; global is the view's id of each of own.
	ids    []FuncID
	own    []Function
	global []FuncID
}

// funcs finds the functions of the part's calls: in funcs (the
// profile's, which it reads only), or numbered as the part's own.
func (pt *inlinePart) funcs(p *Profile, with []int32, funcs map[Function]FuncID) {
	// The functions of the calls inlined at each location, by location
	// (user and kernel apart): frames of many processes at the same
	// code share theirs (see sameCode), and hashing the names of each
	// frame's calls was half of this.
	type chainFuncs struct{ start, n int32 }
	var ofLoc [2]map[*Location]chainFuncs
	for k := range ofLoc {
		ofLoc[k] = make(map[*Location]chainFuncs)
	}
	own := make(map[Function]FuncID)
	var chain []FuncID // the part's ids, by location
	for _, i := range with[pt.lo:pt.hi] {
		f := &p.Frames[i]
		c, ok := ofLoc[b2i(f.Kernel)][f.Loc]
		if !ok {
			c = chainFuncs{int32(len(chain)), int32(len(f.Loc.Inline))}
			for _, in := range f.Loc.Inline {
				fn := Function{Name: in.Function, DSO: in.DSO, Kernel: f.Kernel}
				id, ok := funcs[fn]
				if !ok {
					id = -1 - internFunc(own, &pt.own, fn)
				}
				chain = append(chain, id)
			}
			ofLoc[b2i(f.Kernel)][f.Loc] = c
		}
		pt.ids = append(pt.ids, chain[c.start:c.start+c.n]...)
	}
}

// write writes the part's frames of inlined calls and their chains.
func (pt *inlinePart) write(p *Profile, x *inlineFrames, with []int32) {
	calls := pt.calls
	at := int32(pt.calls + pt.lo) // where the part's chains start
	last := 0                     // the frames before it have their place in at
	if pt.lo > 0 {
		last = int(with[pt.lo-1]) + 1
	}
	for _, i := range with[pt.lo:pt.hi] {
		i := int(i)
		f := &p.Frames[i]
		for j := last; j <= i; j++ {
			x.at[j] = at
		}
		for k := range f.Loc.Inline {
			id := pt.ids[calls-pt.calls]
			if id < 0 {
				id = pt.global[-1-id]
			}
			fr := FrameID(len(p.Frames) + calls)
			x.frames[fr] = Frame{PID: f.PID, Addr: f.Addr, Kernel: f.Kernel, Loc: &f.Loc.Inline[k], Func: id}
			x.chains[at] = fr
			at++
			calls++
		}
		x.chains[at] = FrameID(i)
		at++
		last = i + 1
	}
	if pt.hi == len(with) {
		for j := last; j <= len(p.Frames); j++ {
			x.at[j] = at
		}
	}
}

// expand appends frame fr to st, preceded by the frames of the calls
// inlined at it.
func (x *inlineFrames) expand(st []FrameID, fr FrameID) []FrameID {
	if a, b := x.at[fr], x.at[fr+1]; a < b {
		return append(st, x.chains[a:b]...)
	}
	return append(st, fr)
}
