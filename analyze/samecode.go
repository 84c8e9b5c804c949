package analyze

// sameCode returns, for each frame, the frame named in its place: the
// first of the frames at the same code, or itself. Frames are one per
// process and address, and a capture of many processes running the same
// programs (a build's compilers, a shell's children) holds each of their
// addresses once per process: naming a 60 s capture of Go builds named
// 508 k frames for 88 k addresses, its slowest step but one.
//
// Two user frames are at the same code when each address is in exactly
// one mapping of its process (exec does not leave two images' mappings
// over it), the two mappings are of files with the same build-id (not
// merely the same path: containers hold different files at one path),
// at the same offset in them, and the frames are both return addresses
// or both not. Kernel frames are at the same code when their addresses
// and kinds are equal. Other frames (JIT code, anonymous memory, files
// without a build-id, the vdso) are named each on its own.
//
// A symbolizer names code, not processes: the recorder bundles names and
// lines per file, the kernel's are the same in every process. One that
// knows some processes only (a bundle holding some processes' names and
// not others') may still fail on the first frame at some code and know
// another: symbolize names a frame on its own when the one named in its
// place got no name, and gives the name one of them got to the others.
func (p *Profile) sameCode() []int32 {
	rep := make([]int32, len(p.Frames))
	type codeKey struct {
		obj    int32 // index of the build-id; -1 for the kernel
		off    uint64
		caller bool
	}
	// The keys are packed into 64 bits where they fit (a kernel address
	// with its kind; a file's index below 2^20 and offset below 2^43
	// with its kind), for the map's fast path: half a million frames.
	first := make(map[codeKey]int32)
	kernel := make(map[uint64]int32)
	packed := make(map[uint64]int32)
	firstOf := func(k codeKey) (*map[uint64]int32, uint64, bool) {
		switch {
		case k.obj < 0 && k.off&(1<<63) != 0:
			return &kernel, k.off<<1 | uint64(b2i(k.caller)), true
		case k.obj >= 0 && k.obj < 1<<20 && k.off < 1<<43:
			return &packed, uint64(k.obj)<<44 | k.off<<1 | uint64(b2i(k.caller)), true
		}
		return nil, 0, false
	}
	objs := make(map[string]int32)
	objOf := make(map[*Mapping]int32) // -1: not a file with a build-id
	overlaps := make(map[int32]bool)  // by pid: whether mappings overlap
	for i := range p.Frames {
		rep[i] = int32(i)
		f := &p.Frames[i]
		var k codeKey
		switch {
		case f.Kernel:
			k = codeKey{obj: -1, off: f.Addr, caller: f.Caller}
		default:
			m := p.onlyMapping(f.PID, f.Addr, overlaps)
			if m == nil {
				continue
			}
			obj, ok := objOf[m]
			if !ok {
				obj = -1
				if m.BuildID != "" && m.IsFile() {
					if obj, ok = objs[m.BuildID]; !ok {
						obj = int32(len(objs))
						objs[m.BuildID] = obj
					}
				}
				objOf[m] = obj
			}
			if obj < 0 {
				continue
			}
			k = codeKey{obj: obj, off: f.Addr - m.Start + m.Offset, caller: f.Caller}
		}
		if m, pk, ok := firstOf(k); ok {
			if j, ok := (*m)[pk]; ok {
				rep[i] = j
			} else {
				(*m)[pk] = int32(i)
			}
		} else if j, ok := first[k]; ok {
			rep[i] = j
		} else {
			first[k] = int32(i)
		}
	}
	return rep
}

// onlyMapping returns the mapping of process pid containing addr when
// exactly one of its mappings does, or nil. overlaps caches, by process,
// whether any of its mappings overlap (most processes' do not).
func (p *Profile) onlyMapping(pid int32, addr uint64, overlaps map[int32]bool) *Mapping {
	m := p.Mapping(pid, addr)
	if m == nil {
		return nil
	}
	ms := p.procIndex[pid].Maps
	over, ok := overlaps[pid]
	if !ok {
		// The maps are sorted by start (see Mapping).
		end := uint64(0)
		for i := range ms {
			if ms[i].Start < end {
				over = true
				break
			}
			end = max(end, ms[i].End)
		}
		overlaps[pid] = over
	}
	if !over {
		return m
	}
	for i := range ms {
		if mm := &ms[i]; mm != m && addr >= mm.Start && addr < mm.End {
			return nil
		}
	}
	return m
}
