package analyze

// inlineFrames gives a view frames of their own for the functions inlined
// at the profile's frames: one frame per inlined call, at the same
// address, named by its [Location.Inline] entry.
type inlineFrames struct {
	// frames and funcs are the profile's, then the inlined calls'.
	frames []Frame
	funcs  []Function
	// chain holds, for a frame with inlined calls, its frames leaf
	// first: the innermost inlined call, ..., the outermost, then the
	// frame itself.
	chain map[FrameID][]FrameID
}

// newInlineFrames returns the inlined calls of p's frames, or nil when no
// frame has any.
func newInlineFrames(p *Profile) *inlineFrames {
	var x *inlineFrames
	var funcs map[Function]FuncID
	for i := range p.Frames {
		f := &p.Frames[i]
		if len(f.Loc.Inline) == 0 {
			continue
		}
		if x == nil {
			x = &inlineFrames{
				frames: p.Frames[:len(p.Frames):len(p.Frames)], // appends copy
				funcs:  p.Funcs[:len(p.Funcs):len(p.Funcs)],
				chain:  make(map[FrameID][]FrameID),
			}
			funcs = make(map[Function]FuncID, len(p.Funcs))
			for id, fn := range p.Funcs {
				funcs[fn] = FuncID(id)
			}
		}
		chain := make([]FrameID, 0, len(f.Loc.Inline)+1)
		for _, in := range f.Loc.Inline {
			id := internFunc(funcs, &x.funcs, Function{Name: in.Function, DSO: in.DSO, Kernel: f.Kernel})
			chain = append(chain, FrameID(len(x.frames)))
			x.frames = append(x.frames, Frame{PID: f.PID, Addr: f.Addr, Kernel: f.Kernel, Loc: in, Func: id})
		}
		x.chain[FrameID(i)] = append(chain, FrameID(i))
	}
	return x
}

// expand appends frame fr to st, preceded by the frames of the calls
// inlined at it.
func (x *inlineFrames) expand(st []FrameID, fr FrameID) []FrameID {
	if c, ok := x.chain[fr]; ok {
		return append(st, c...)
	}
	return append(st, fr)
}
