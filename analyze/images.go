package analyze

import (
	"math"
	"slices"
)

// imagePIDBase is the first of the pids given to the earlier images of
// processes (see [Profile.splitImages]): above any pid the kernel hands
// out (pid_max is at most 2^22).
const imagePIDBase = 1 << 30

// splitImages gives the samples that a process took in an earlier image
// (before an exec, or before a mapping replaced one of a file at the
// same addresses) frames of their own where a later mapping took their
// addresses over: the frames read are one per process and address, and
// such an address would be named from the image mapped there last. A
// forked process's samples before it execs (a go command's child about
// to become a compiler, both Go binaries at 0x400000) took the names of
// the functions the new image has there: samples of one function of
// `a` that then ran `b` were all charged to b's function at those
// addresses.
//
// Each earlier image is a process of its own in procIndex (not in
// Processes, and not the samples' process: they keep their pid), with a
// pid from imagePIDBase and the mappings its process had then; the
// frames of its samples in the ranges replaced are keyed by it.
// Anonymous memory mapped again (JIT code) is not split: its names are
// the bundle's, by process and address. The bundle, keyed by the real
// pid, does not name the earlier images' frames: the recorder
// describes their lines by build-id and offset, which name them (see
// [BundleSymbolizer]), and frames at the same code in other processes
// share their names (see [Profile.sameCode]). hists are the mapping
// histories of the processes that had a file's mapping replaced (see
// [resolveMaps]); keys, the frames as read, are returned with the new
// frames appended.
func (p *Profile) splitImages(hists map[int32]*mapHistory, keys []frameKey) []frameKey {
	if len(hists) == 0 {
		return keys
	}
	next := int32(imagePIDBase)
	for pid := range p.procIndex {
		if pid >= next {
			next = pid + 1
		}
	}
	type image struct {
		pid int32 // the process's
		era int   // its index among the process's images
	}
	images := make(map[image]*Process)
	type stackOf struct {
		stack StackID
		pid   int32 // the image's
	}
	stacks := make(map[stackOf]StackID)
	frames := make(map[frameKey]FrameID)
	var buf []FrameID
	// The pids with a history in a bit set, which most samples' miss
	// (a map lookup per sample was most of this over a 60 s capture of
	// builds); a history is looked up once a run of one process's.
	has := newPIDSet(hists)
	lastPID, h := int32(-1), (*mapHistory)(nil)
	for i := range p.Samples {
		s := &p.Samples[i]
		if s.Time <= 0 || !has.has(s.PID) {
			continue
		}
		if s.PID != lastPID {
			lastPID, h = s.PID, hists[s.PID]
		}
		era, at := slices.BinarySearch(h.bounds, s.Time)
		if at {
			era++ // the mapping made then is the sample's
		}
		if era == len(h.bounds) {
			continue // the last image: the process's own frames
		}
		img := images[image{s.PID, era}]
		if img == nil {
			if next == 1<<31-1 {
				continue
			}
			img = p.earlierImage(p.procIndex[s.PID], h, era, next)
			next++
			images[image{s.PID, era}] = img
		}
		k := stackOf{s.Stack, img.PID}
		if id, ok := stacks[k]; ok {
			s.Stack = id
			continue
		}
		buf = buf[:0]
		moved := false
		for _, fid := range p.Stack(s.Stack) {
			if f := keys[fid]; !f.Kernel && inSpans(h.spans, f.Addr) {
				f.PID = img.PID
				id, ok := frames[f]
				if !ok {
					id = FrameID(len(keys))
					keys = append(keys, f)
					frames[f] = id
				}
				fid, moved = id, true
			}
			buf = append(buf, fid)
		}
		if !moved {
			stacks[k] = s.Stack
			continue
		}
		id := StackID(p.NumStacks())
		p.stackFrames = append(p.stackFrames, buf...)
		p.stackStart = append(p.stackStart, int32(len(p.stackFrames)))
		stacks[k] = id
		s.Stack = id
	}
	return keys
}

// pidSet is a set of pids, as bits from the least of them.
type pidSet struct {
	lo   int32
	bits []uint64
}

// newPIDSet returns the set of m's keys.
func newPIDSet[V any](m map[int32]V) pidSet {
	lo, hi := int32(math.MaxInt32), int32(math.MinInt32)
	for pid := range m {
		lo, hi = min(lo, pid), max(hi, pid)
	}
	if lo > hi {
		return pidSet{}
	}
	s := pidSet{lo: lo, bits: make([]uint64, (int64(hi)-int64(lo))/64+1)}
	for pid := range m {
		d := uint32(pid - lo)
		s.bits[d/64] |= 1 << (d % 64)
	}
	return s
}

// has reports whether pid is in s.
func (s pidSet) has(pid int32) bool {
	if pid < s.lo {
		return false
	}
	d := uint64(int64(pid) - int64(s.lo))
	return d/64 < uint64(len(s.bits)) && s.bits[d/64]&(1<<(d%64)) != 0
}

// earlierImage returns the process standing for image era of pr, whose
// mapping history is h, with pid: pr's mappings before h.bounds[era].
func (p *Profile) earlierImage(pr *Process, h *mapHistory, era int, pid int32) *Process {
	n, _ := slices.BinarySearchFunc(h.byTime, h.bounds[era], func(m Mapping, t int64) int {
		switch {
		case m.time < t:
			return -1
		case m.time > t:
			return 1
		}
		return 0
	})
	img := &Process{PID: pid, NSPID: pr.NSPID, Container: pr.Container}
	img.Comm, img.Cmdline = pr.NameAt(h.bounds[era] - 1)
	img.Maps, img.replaced, _ = resolveMaps(slices.Clone(h.byTime[:n]))
	p.procIndex[pid] = img
	if p.images == nil {
		p.images = make(map[int32]bool)
	}
	p.images[pid] = true
	return img
}

// imageLines names addr in the earlier image pid stands for (see
// [Profile.splitImages]) from the source lines the recorder described
// by the mapped file's build-id and offset: the bundle, keyed by the
// process's pid, names what its last image has at the address.
func (p *Profile) imageLines(pid int32, addr uint64) (Location, bool) {
	if !p.images[pid] || p.Lines.Files() == 0 {
		return Location{}, false
	}
	m := p.Mapping(pid, addr)
	if m == nil || m.BuildID == "" {
		return Location{}, false
	}
	fr, ok := p.Lines.LookupObject(m.BuildID, addr-m.Start+m.Offset)
	if !ok || len(fr) == 0 || fr[len(fr)-1].Function == "" {
		return Location{}, false
	}
	loc := Location{Function: fr[len(fr)-1].Function, DSO: m.Base()}
	loc.withFrames(fr)
	return loc, true
}
