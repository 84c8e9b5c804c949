package analyze

import (
	"encoding/binary"
	"fmt"
	"slices"
	"strings"
)

// ViewOptions select and shape the samples of a profile for one report or
// export. Reports and exports given the same options count the same
// samples on the same stacks, so their numbers agree. The zero value keeps
// every sample with its whole stack, top-down.
type ViewOptions struct {
	// Filter selects the samples; see [Profile.Select].
	Filter Filter
	// HideKernel removes kernel frames from the stacks: the time spent in
	// the kernel counts as self time of the innermost user frame. Samples
	// without any user frame (kernel threads) are dropped. Default false.
	HideKernel bool
	// Focus keeps the samples with a frame of the function named exactly
	// Focus and cuts each stack above the function's outermost call, so
	// the function is the root of every stack. Default "" (no focus).
	Focus string
	// FocusDSO keeps the samples with a frame in a DSO whose name
	// contains this text, ignoring case, and cuts each stack above the
	// outermost such frame. Applied after Focus. Default "".
	FocusDSO string
	// Invert makes the view bottom-up: [View.Path] lists frames leaf
	// first and [View.CallTree] builds callers trees. Default false.
	Invert bool
	// Inline shows the functions inlined at each frame ([Location.Inline],
	// from the source lines a recording bundled) as frames of their own,
	// each called from the function it was inlined into, as perf report
	// does. Focus then matches them too. Default false: frames as
	// recorded (the pprof export keeps inlined functions as lines of a
	// location instead).
	Inline bool
	// Value is the sample type the view weighs stacks by, an index in
	// [Profile.SampleTypes] ([Profile.ValueIndex] finds it by name): the
	// view keeps the samples of its kind of measurement ([Profile.Kind]:
	// the stack samples, or the allocations), and its
	// [Profile.Top], [Profile.Tree], [Profile.Group] and
	// [View.StackCounts] sum it. Default 0: stack samples, counted.
	Value int
	// AllKinds keeps the samples of every kind of measurement, not only
	// Value's: for [View.CallGraph], which reads the instrumented calls
	// and the stack samples together. Default false.
	AllKinds bool
}

// View is the samples and stacks one report or export shows.
//
// Its Profile shares processes, threads, frames and functions with the
// profile it came from; only its stacks differ when HideKernel, Inline or
// a focus is set, and Samples refer to those stacks. Inline also adds
// frames and functions for the inlined calls, after the profile's. Use the Profile's methods
// ([Profile.Top], [Profile.Group], [Profile.Tree], [Profile.Stack]) on the
// view's samples.
type View struct {
	*Profile
	// Samples are the selected samples in file order.
	Samples []Sample
	// Invert is [ViewOptions.Invert].
	Invert bool
	// filter is [ViewOptions.Filter], for the events that are not
	// samples (frees; see [View.Heap]).
	filter Filter
}

// View selects and shapes the samples of p as o says. It fails only on a
// bad Filter.Comm expression.
func (p *Profile) View(o ViewOptions) (*View, error) {
	if o.Value < 0 || o.Value >= max(1, len(p.SampleTypes)) {
		return nil, fmt.Errorf("view: no sample type %d (the profile has %d)", o.Value, len(p.SampleTypes))
	}
	samples, err := p.Select(o.Filter)
	if err != nil {
		return nil, err
	}
	if len(p.SampleTypes) > 1 || o.Value != 0 {
		if !o.AllKinds {
			samples = p.withValue(samples, p.Kind(o.Value))
		}
		vp := *p // a shallow copy weighing by o.Value
		vp.value = o.Value
		p = &vp
	}
	v := &View{Profile: p, Samples: samples, Invert: o.Invert, filter: o.Filter}
	var inl *inlineFrames
	if o.Inline {
		inl = p.inlineFrames()
	}
	if !o.HideKernel && o.Focus == "" && o.FocusDSO == "" && inl == nil {
		return v, nil
	}
	d := *p // a shallow copy sharing everything but the stack tables
	d.Samples = nil
	if inl != nil {
		d.Frames, d.Funcs = inl.frames, inl.funcs
	}
	// With inlined calls the only change, a stack's shape is its own:
	// expanding frames keeps them all, so distinct stacks stay distinct
	// and need no index to be merged by.
	merge := o.HideKernel || o.Focus != "" || o.FocusDSO != ""
	var buf []FrameID
	dso := strings.ToLower(o.FocusDSO)
	shape := func(st []FrameID) []FrameID {
		buf = buf[:0]
		for _, fr := range st {
			if o.HideKernel && p.Frames[fr].Kernel {
				continue
			}
			if inl != nil {
				buf = inl.expand(buf, fr)
				continue
			}
			buf = append(buf, fr)
		}
		if o.Focus != "" {
			buf = cutAbove(buf, func(fr FrameID) bool { return d.Funcs[d.Frames[fr].Func].Name == o.Focus })
		}
		if dso != "" {
			buf = cutAbove(buf, func(fr FrameID) bool {
				return strings.Contains(strings.ToLower(d.Funcs[d.Frames[fr].Func].DSO), dso)
			})
		}
		return buf
	}
	if !merge {
		// Only inlined calls are shown: each stack keeps its id (those
		// no sample selected left empty), so the samples keep theirs (a
		// large capture's were copied for nothing, some 15 MB), and the
		// stacks are expanded when first asked for (see lazyStacks).
		used := make([]bool, p.NumStacks())
		empty := false
		for i := range samples {
			if id := samples[i].Stack; !used[id] {
				used[id] = true
				empty = empty || len(p.Stack(id)) == 0
			}
		}
		if empty {
			// A sample of no frame is dropped, as when stacks are
			// merged.
			samples = slices.DeleteFunc(slices.Clone(samples), func(s Sample) bool { return len(p.Stack(s.Stack)) == 0 })
		}
		d.stackStart, d.stackFrames = nil, nil
		d.lazy = &lazyStacks{n: p.NumStacks(), src: p, inl: inl, used: used}
		d.Samples = samples
		v.Profile, v.Samples = &d, samples
		return v, nil
	}
	d.stackStart = make([]int32, 1, p.NumStacks()+1)
	d.stackFrames = make([]FrameID, 0, len(p.stackFrames)+len(p.stackFrames)/4)
	remap := make([]StackID, p.NumStacks())
	for i := range remap {
		remap[i] = -2 // not decided yet; -1 drops the stack
	}
	index := make(map[string]StackID)
	var key []byte
	out := make([]Sample, 0, len(samples))
	for _, s := range samples {
		id := remap[s.Stack]
		if id == -2 {
			st := shape(p.Stack(s.Stack))
			id = -1
			if len(st) > 0 && !merge {
				id = StackID(len(d.stackStart) - 1)
				d.stackFrames = append(d.stackFrames, st...)
				d.stackStart = append(d.stackStart, int32(len(d.stackFrames)))
			} else if len(st) > 0 {
				key = key[:0]
				for _, fr := range st {
					key = binary.LittleEndian.AppendUint32(key, uint32(fr))
				}
				nid, ok := index[string(key)]
				if !ok {
					nid = StackID(len(d.stackStart) - 1)
					index[string(key)] = nid
					d.stackFrames = append(d.stackFrames, st...)
					d.stackStart = append(d.stackStart, int32(len(d.stackFrames)))
				}
				id = nid
			}
			remap[s.Stack] = id
		}
		if id < 0 {
			continue
		}
		s.Stack = id
		out = append(out, s)
	}
	d.Samples = out
	v.Profile, v.Samples = &d, out
	return v, nil
}

// cutAbove returns the frames of st (leaf first) up to and including the
// outermost one for which match is true, or nil when none is.
func cutAbove(st []FrameID, match func(FrameID) bool) []FrameID {
	for i := len(st) - 1; i >= 0; i-- {
		if match(st[i]) {
			return st[:i+1]
		}
	}
	return nil
}

// Path appends the functions of stack id to buf, root first, or leaf
// first when the view is inverted, and returns the extended slice.
func (v *View) Path(id StackID, buf []FuncID) []FuncID {
	st := v.Stack(id)
	if v.Invert {
		for _, fr := range st {
			buf = append(buf, v.Frames[fr].Func)
		}
		return buf
	}
	for i := len(st) - 1; i >= 0; i-- {
		buf = append(buf, v.Frames[st[i]].Func)
	}
	return buf
}

// CallTree builds the call tree of samples as [Profile.Tree] does, with
// o.BottomUp meaning "the other way round" for an inverted view: an
// inverted view's default tree is the callers tree.
func (v *View) CallTree(samples []Sample, o TreeOptions) *Node {
	o.BottomUp = o.BottomUp != v.Invert
	return v.Tree(samples, o)
}

// StackCounts returns the selected value ([ViewOptions.Value]) summed
// over the samples of each of the view's stacks, indexed by StackID: the
// number of samples, by default.
func (v *View) StackCounts(samples []Sample) []int64 {
	return v.stackCounts(samples)
}

// withValue returns the samples of the kind of measurement of columns
// kind ([Profile.Kind]): those with a value other than 0 in one of them;
// samples itself when all have one.
func (p *Profile) withValue(samples []Sample, kind []int) []Sample {
	has := func(s *Sample) bool {
		for _, t := range kind {
			if p.Value(s, t) != 0 {
				return true
			}
		}
		return false
	}
	keep := 0
	for i := range samples {
		if has(&samples[i]) {
			keep++
		}
	}
	if keep == len(samples) {
		return samples
	}
	out := make([]Sample, 0, keep)
	for i := range samples {
		if has(&samples[i]) {
			out = append(out, samples[i])
		}
	}
	return out
}
