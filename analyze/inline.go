package analyze

import "sync"

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
func newInlineFrames(p *Profile, room []Frame, with []int32) *inlineFrames {
	// The frames are copied once, to a slice with room for the inlined
	// calls: appending to a full one of a million frames copied them
	// over and over.
	calls := 0
	for _, i := range with {
		calls += len(p.Frames[i].Loc.Inline)
	}
	if calls == 0 {
		return nil
	}
	frames := room
	if len(room) != len(p.Frames) || cap(room)-len(room) < calls || len(room) == 0 || &room[0] != &p.Frames[0] {
		frames = append(make([]Frame, 0, len(p.Frames)+calls), p.Frames...)
	}
	x := &inlineFrames{
		frames: frames,
		funcs:  p.Funcs[:len(p.Funcs):len(p.Funcs)], // appends copy
		chains: make([]FrameID, 0, calls+len(with)),
		at:     make([]int32, len(p.Frames)+1),
	}
	funcs := make(map[Function]FuncID, len(p.Funcs)+calls)
	for id, fn := range p.Funcs {
		funcs[fn] = FuncID(id)
	}
	// The functions of the calls inlined at each location, by location
	// (user and kernel apart): frames of many processes at the same
	// code share theirs (see sameCode), and hashing the names of each
	// frame's calls was half of this.
	type chainFuncs struct{ start, n int32 }
	var ofLoc [2]map[*Location]chainFuncs
	for k := range ofLoc {
		ofLoc[k] = make(map[*Location]chainFuncs)
	}
	var ids []FuncID
	last := 0 // the frames before it have their place in at
	for _, i := range with {
		i := int(i)
		f := &p.Frames[i]
		for j := last; j <= i; j++ {
			x.at[j] = int32(len(x.chains))
		}
		c, ok := ofLoc[b2i(f.Kernel)][f.Loc]
		if !ok {
			c = chainFuncs{int32(len(ids)), int32(len(f.Loc.Inline))}
			for _, in := range f.Loc.Inline {
				ids = append(ids, internFunc(funcs, &x.funcs, Function{Name: in.Function, DSO: in.DSO, Kernel: f.Kernel}))
			}
			ofLoc[b2i(f.Kernel)][f.Loc] = c
		}
		for k := range f.Loc.Inline {
			x.chains = append(x.chains, FrameID(len(x.frames)))
			x.frames = append(x.frames, Frame{PID: f.PID, Addr: f.Addr, Kernel: f.Kernel, Loc: &f.Loc.Inline[k], Func: ids[c.start+int32(k)]})
		}
		x.chains = append(x.chains, FrameID(i))
		last = i + 1
	}
	for j := last; j <= len(p.Frames); j++ {
		x.at[j] = int32(len(x.chains))
	}
	return x
}

// expand appends frame fr to st, preceded by the frames of the calls
// inlined at it.
func (x *inlineFrames) expand(st []FrameID, fr FrameID) []FrameID {
	if a, b := x.at[fr], x.at[fr+1]; a < b {
		return append(st, x.chains[a:b]...)
	}
	return append(st, fr)
}
