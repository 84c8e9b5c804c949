package analyze

import (
	"runtime"
	"sync"
)

// altFrames are the frames [Profile.mergeSameCode] merged into others:
// frame i's are pid[start[i]:start[i+1]] at addr[start[i]:start[i+1]], in
// the order they were first sampled. A symbolizer that knows some
// processes only (a bundle holding some processes' names and not
// others') may fail on a frame's first process and know one of these.
type altFrames struct {
	start []int32
	pid   []int32
	addr  []uint64
}

// of returns the alternate processes and addresses of frame id.
func (a *altFrames) of(id int) ([]int32, []uint64) {
	if a == nil || len(a.start) == 0 {
		return nil, nil
	}
	lo, hi := a.start[id], a.start[id+1]
	return a.pid[lo:hi], a.addr[lo:hi]
}

// mergeSameCode makes p's frames of raw, the frames as read, making the
// frames at the same code one frame (rep: see [Profile.sameCode]): the
// first, in frame order, stands for the others, whose processes and
// addresses are kept as its alternates, and the stacks are renumbered.
// Frames are read one per process and address: a 60 s capture of builds
// has 709 k of them for 93 k places in code, and every step after
// loading (naming, the views, the exports) went over each.
//
// The alternates are kept when keep is set. A capture nsprof recorded
// with its bundle complete (see [capture.MetaSymbolsComplete]) has no
// need of them: its recorder named every sampled address of a file in
// every process that mapped it, the same (a 60 s capture's 616 k
// alternates took 7.4 MB and 5 ms to keep).
//
// The profile's frames get room after them for the inlined calls the
// lines describe (see [lazyInline]).
func (p *Profile) mergeSameCode(raw []frameKey, rep []int32, keep bool) {
	newID := make([]FrameID, len(raw))
	n, user := 0, 0
	for i, r := range rep {
		if int(r) == i {
			newID[i] = FrameID(n)
			n++
			user += 1 - b2i(raw[i].Kernel)
		} else {
			newID[i] = newID[r] // r < i: numbered already
		}
	}
	all := p.framesWithRoom(n, user)
	frames := all[:n:n]
	var alts altFrames
	if m := len(raw) - n; m > 0 && keep {
		alts = altFrames{start: make([]int32, n+1), pid: make([]int32, m), addr: make([]uint64, m)}
		for i, r := range rep {
			if int(r) != i {
				alts.start[newID[i]+1]++
			}
		}
		for i := 1; i <= n; i++ {
			alts.start[i] += alts.start[i-1]
		}
	}
	// Each merged frame's alternates in frame order: fill is the next
	// free place of each.
	fill := append([]int32(nil), alts.start[:min(n, len(alts.start))]...)
	for i, r := range rep {
		id := newID[i]
		if int(r) == i {
			k := &raw[i]
			frames[id] = Frame{PID: k.PID, Addr: k.Addr, Kernel: k.Kernel, Caller: k.Caller, Func: -1}
			continue
		}
		if len(fill) == 0 {
			continue
		}
		j := fill[id]
		fill[id]++
		alts.pid[j], alts.addr[j] = raw[i].PID, raw[i].Addr
	}
	p.Frames, p.alts = frames, alts
	p.inline = &lazyInline{room: all}
	if n < len(raw) {
		renumber(p.stackFrames, newID)
	}
}

// renumber replaces each frame id of ids by its new number, in parts side
// by side: a 60 s capture's stacks hold 4.5 M frame ids.
func renumber(ids []FrameID, newID []FrameID) {
	parts := min(runtime.GOMAXPROCS(0), 8, len(ids)>>16+1)
	var wg sync.WaitGroup
	for k := range parts {
		lo, hi := len(ids)*k/parts, len(ids)*(k+1)/parts
		wg.Go(func() {
			for j, id := range ids[lo:hi] {
				ids[lo+j] = newID[id]
			}
		})
	}
	wg.Wait()
}

// framesWithRoom returns n frames with room after them for the inlined
// calls the lines describe, for the view that shows those as frames (see
// [Profile.inlineFrames]): copying a million frames for it was more of
// the memory of a report than the frames themselves. A frame named from
// the host's DWARF may have inlined calls of its own: an eighth more room
// leaves space for those of a few thousand.
//
// user is how many of the n frames are user frames.
func (p *Profile) framesWithRoom(n, user int) []Frame {
	k := p.Lines.InlineFrames()
	if calls, recs := p.Lines.FileInlineFrames(); recs > 0 {
		// Records of files serve every frame at their code: as many
		// inlined calls a user frame as they have a record, on average
		// (see reserveInline when that falls short).
		k += int(int64(user) * int64(calls) / int64(recs))
	}
	all := make([]Frame, n, n+k+k/8)
	// The room is written now, while no collection has read it: a
	// collection reads all of a new slice of pointers, its fresh pages
	// then mapped to the zero page, and each page written afterwards
	// faulted again to be copied, with every CPU's TLB flushed (writing
	// a 60 s capture's inlined calls took 20 ms instead of 5).
	clear(all[n:cap(all)])
	return all
}

// unnamedWithAlts returns the frames no symbolizer named (by[i] < 0, by
// frame) that have alternates.
func (p *Profile) unnamedWithAlts(by []int16) []int32 {
	var out []int32
	if len(p.alts.start) == 0 {
		return nil
	}
	for i, k := range by {
		if k < 0 && p.alts.start[i] < p.alts.start[i+1] {
			out = append(out, int32(i))
		}
	}
	return out
}

// nameAlt names frame i in its alternates' processes, with name (which
// names a frame with c and says which of c's symbolizers did, -1 for
// none): the first name one of them gets.
func (p *Profile) nameAlt(c Chain, name func(Chain, *Frame) (Location, int), i int) (Location, int) {
	pids, addrs := p.alts.of(i)
	f := p.Frames[i]
	for j := range pids {
		f.PID, f.Addr = pids[j], addrs[j]
		if loc, k := name(c, &f); k >= 0 {
			return loc, k
		}
	}
	return Location{}, -1
}
