package analyze

import (
	"runtime"
	"sync"
)

// sameCode returns, for each frame as read (one per process and
// address), the frame that stands for it: the first of the frames at the
// same code, or itself (see [Profile.mergeSameCode]). A capture of many
// processes running the same programs (a build's compilers, a shell's
// children) holds each of their addresses once per process: a 60 s
// capture of Go builds read 709 k frames for 93 k places in code.
//
// Two user frames are at the same code when the mappings holding them in
// their processes (see [resolveMaps]) are of files with the same build-id
// (not merely the same path: containers hold different files at one
// path), at the same offset in them, and the frames are both return
// addresses or both not. Kernel frames are at the same code when their
// addresses and kinds are equal. Other frames (JIT code, anonymous
// memory, files without a build-id, the vdso, and those that may be of
// an image an exec replaced: see [Profile.otherImage]) stand for
// themselves.
//
// A symbolizer names code, not processes: the recorder bundles names and
// lines per file, the kernel's are the same in every process. One that
// knows some processes only (a bundle holding some processes' names and
// not others') may still fail on the first frame at some code and know
// another: symbolize then names the frame in the others' processes.
func (p *Profile) sameCode(frames []frameKey) []int32 {
	rep := make([]int32, len(frames))
	// Each frame's code is found side by side (a mapping lookup per
	// frame: half of this), then the frames at each code are matched in
	// frame order.
	p.numberObjects()
	keys := make([]uint64, len(frames))
	class := make([]codeClass, len(frames))
	parallelFrames(len(frames), func(int) {}, func() func(i int) {
		// Frames come in runs of one process's: its process is
		// looked up once a run.
		var pr *Process
		pid := int32(-1)
		return func(i int) {
			rep[i] = int32(i)
			f := &frames[i]
			if !f.Kernel && (pr == nil || f.PID != pid) {
				pr, pid = p.procIndex[f.PID], f.PID
			}
			if k, m, ok := codeIn(pr, f); ok && !p.otherImage(pr, f, m) {
				keys[i], class[i] = k.pack()
			}
		}
	})
	// The frames at each code are matched in shards of the codes, side
	// by side: one map of half a million codes was a tenth of naming a
	// 60 s capture of builds. Each shard goes over the frames in order,
	// so the first frame at a code is its representative, as in one pass.
	shards := min(runtime.GOMAXPROCS(0), 8, len(class)>>14+1)
	match := func(shard int) {
		kernel := make(map[uint64]int32)
		packed := make(map[uint64]int32, len(class)/2/shards)
		first := make(map[codeKey]int32)
		for i, c := range class {
			var m map[uint64]int32
			switch c {
			case codeNone:
				continue
			case codeKernel:
				m = kernel
			case codePacked:
				m = packed
			default:
				if shard != 0 {
					continue
				}
				k, _, _ := p.codeOf(&frames[i])
				if j, ok := first[k]; ok {
					rep[i] = j
				} else {
					first[k] = int32(i)
				}
				continue
			}
			if codeShard(keys[i], c, shards) != shard {
				continue
			}
			if j, ok := m[keys[i]]; ok {
				rep[i] = j
			} else {
				m[keys[i]] = int32(i)
			}
		}
	}
	var wg sync.WaitGroup
	for shard := 1; shard < shards; shard++ {
		wg.Go(func() { match(shard) })
	}
	match(0)
	wg.Wait()
	return rep
}

// codeShard returns the shard of n that matches the frames at a code of
// packed key k and class c (see [Profile.sameCode]).
func codeShard(k uint64, c codeClass, n int) int {
	if n == 1 {
		return 0
	}
	return int((k^uint64(c)<<62)*0x9e3779b97f4a7c15>>32) % n
}

// otherImage reports whether user frame f may be of another image than
// the one its process maps at its address now (see [resolveMaps]): the
// address is in a range a later mapping replaced, and the capture's bundle
// does not name it in f's process. The recorder names such an address
// from the later image when the later image was sampled there, and
// leaves it out when only the earlier one was (a forked go command's
// samples before it execed a compiler): named from another process's
// compiler, it would take a compiler function's name for go's code.
// Such a frame is named on its own, as it would be without other
// processes.
//
// A process sampled only after the mapping now at f's address was made
// (a compiler its go command forked and that execed before a sample
// caught it: 428 of the 622 such processes of a 60 s capture of builds)
// has no stack of an earlier image there: the bundle is not asked (248 k
// of the 362 k frames in replaced ranges), and a frame it leaves out
// shares its code's name. A sample's time is when its stack was taken (a
// switch out's for off-CPU time), a MAP frame's no earlier than its
// mapping was made.
//
// pr is f's process, m the mapping at f's address in it (nil for none).
func (p *Profile) otherImage(pr *Process, f *frameKey, m *Mapping) bool {
	if f.Kernel {
		return false
	}
	if pr == nil || len(pr.replaced) == 0 || !inSpans(pr.replaced, f.Addr) {
		return false
	}
	if pr.firstSample > 0 && m != nil && m.time < pr.firstSample {
		return false
	}
	if p.Bundle == nil {
		return true
	}
	addr := f.Addr
	if f.Caller && addr > 0 {
		addr-- // as nameReturn looks it up
	}
	s, ok := p.Bundle.Lookup(f.PID, addr)
	return !ok || s.Name == "" || sysprofPlaceholder(s.Name)
}

// codeKey is the code a frame is at: the index of a file's build-id
// (-1 for the kernel), the offset in it, and whether a return address is
// there.
type codeKey struct {
	obj    int32
	off    uint64
	caller bool
}

// codeClass says which table matches a frame's [codeKey].
type codeClass uint8

const (
	codeNone   codeClass = iota // named alone
	codeKernel                  // a kernel address with its kind
	codePacked                  // a file's index below 2^20, offset below 2^43, kind
	codeOther                   // the whole key
)

// pack returns k in 64 bits where it fits (for the map's fast path: half
// a million frames), and the table it goes to.
func (k codeKey) pack() (uint64, codeClass) {
	switch {
	case k.obj < 0 && k.off&(1<<63) != 0:
		return k.off<<1 | uint64(b2i(k.caller)), codeKernel
	case k.obj >= 0 && k.obj < 1<<20 && k.off < 1<<43:
		return uint64(k.obj)<<44 | k.off<<1 | uint64(b2i(k.caller)), codePacked
	}
	return 0, codeOther
}

// numberObjects numbers the build-ids of the files mapped in p's
// processes, in each mapping's obj (-1: a mapping of no file with a
// build-id).
func (p *Profile) numberObjects() {
	objs := make(map[string]int32)
	for _, pr := range p.procIndex {
		for i := range pr.Maps {
			m := &pr.Maps[i]
			m.obj = -1
			if m.BuildID != "" && m.IsFile() {
				obj, ok := objs[m.BuildID]
				if !ok {
					obj = int32(len(objs))
					objs[m.BuildID] = obj
				}
				m.obj = obj
			}
		}
	}
}

// codeOf returns the code frame f is at, and the mapping of a user frame
// at its address; false for a frame named alone. The objects must have
// been numbered (see [Profile.numberObjects]).
func (p *Profile) codeOf(f *frameKey) (codeKey, *Mapping, bool) {
	return codeIn(p.procIndex[f.PID], f)
}

// codeIn is codeOf with f's process pr.
func codeIn(pr *Process, f *frameKey) (codeKey, *Mapping, bool) {
	if f.Kernel {
		return codeKey{obj: -1, off: f.Addr, caller: f.Caller}, nil, true
	}
	m := pr.mapping(f.Addr)
	if m == nil {
		return codeKey{}, nil, false
	}
	if m.obj < 0 {
		return codeKey{}, m, false
	}
	return codeKey{obj: m.obj, off: f.Addr - m.Start + m.Offset, caller: f.Caller}, m, true
}
