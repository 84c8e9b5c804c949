package analyze

import (
	"bytes"
	"encoding/binary"
	"hash/maphash"
	"runtime"

	"nsprof/capture"
)

// Interning while the capture is read: a sample's stack is found by a
// hash of its pid and raw addresses, and a new stack's frames by their
// process, kind and address, each kept once (see [builder]).

// frameKey is a frame as read: its process, kind and address.
type frameKey struct {
	PID            int32
	Kernel, Caller bool
	Addr           uint64
}

// procFrames interns the frames of one process by address, one map per
// kind of frame: a few hundred addresses a process whose map stays in the
// cache while its samples are read, and a 64-bit key hashed by the map's
// fast path. One map keyed by frameKey for all processes was most of the
// time of interning stacks on a capture of a thousand processes.
type procFrames struct {
	user, caller, kernel map[uint64]FrameID
}

// of returns the map of the frames of this kind.
func (f *procFrames) of(kernel, caller bool) *map[uint64]FrameID {
	switch {
	case kernel:
		return &f.kernel
	case caller:
		return &f.caller
	}
	return &f.user
}

// stackKey identifies a stack by a 128-bit hash of its pid, kind and
// addresses (see [builder.stack]).
type stackKey [2]uint64

// stack interns the stack of pid's addrs: the key is the pid and the raw
// addresses, so a stack seen before costs one map lookup and no
// allocation (in the process's map: see [builder.procStacks]). ret says
// every address is a return address, as in an allocation's stack; such
// stacks have keys of their own. The map holds a 128-bit hash of the key
// (two 64-bit hashes of independent random seeds), not the key: the keys
// of a large capture's stacks took as many bytes as the stacks themselves
// and their hashing and copying most of the interning time. Two distinct
// stacks share a hash with a chance below 10^-26 for a million stacks.
func (b *builder) stack(pid int32, addrs []uint64, ret bool) StackID {
	k := appendStackKey(b.key[:0], pid, addrs, ret)
	b.key = k
	if b.lastStack >= 0 && bytes.Equal(k, b.lastKey) {
		return b.lastStack // the same stack as the sample before
	}
	b.lastKey = append(b.lastKey[:0], k...)
	h := stackKey{maphash.Bytes(b.seeds[0], k), maphash.Bytes(b.seeds[1], k)}
	var id StackID
	r := &b.recentStacks[h[0]>>(64-recentBits)]
	if r.key == h && r.id >= 0 {
		id = r.id
	} else {
		m := b.procStacks(pid)
		v, ok := m[h]
		if !ok {
			v = b.addStack(pid, addrs, ret)
			m[h] = v
		}
		*r = recentStack{h, v}
		id = v
	}
	b.lastStack = id
	return id
}

// procStacks returns the map of pid's stacks. Each process has its own:
// a process's samples come in runs, while its map stays in the
// processor's caches. One map for all, of the 263 k stacks of a 60 s
// capture of 858 processes, missed the caches at nearly every lookup
// (57 ms of 0.47 s against 9 ms; the whole report 8 % slower).
func (b *builder) procStacks(pid int32) map[stackKey]StackID {
	if b.lastStacks != nil && b.lastStackPID == pid {
		return b.lastStacks
	}
	m := b.stacks[pid]
	if m == nil {
		// Sized for its share of the capture's samples at the rate of
		// new stacks read so far: grown from small, the maps' rehashing
		// was most of adding the 60 s capture's stacks to them. Before
		// the sizes are known, for as many as the processes before it
		// had on average, as newFrameMap sizes the frames' maps.
		hint := 0
		if n, ok := b.stackBound[pid]; ok {
			hint = min(int(float64(n)*b.stackRate)+1, int(n))
		} else if len(b.stacks) > 0 {
			hint = min(int(b.nStacks)/len(b.stacks), 1<<12)
		}
		m = make(map[stackKey]StackID, hint)
		b.stacks[pid] = m
	}
	b.lastStackPID, b.lastStacks = pid, m
	return m
}

// appendStackKey appends the key of the stack of pid's addrs to k (see
// [builder.stack]).
func appendStackKey(k []byte, pid int32, addrs []uint64, ret bool) []byte {
	k = binary.LittleEndian.AppendUint32(k, uint32(pid))
	if ret {
		k = append(k, 'r')
	}
	for _, a := range addrs {
		k = binary.LittleEndian.AppendUint64(k, a)
	}
	return k
}

// addStack numbers a new stack and adds its frames (see [builder.newStack]),
// or queues them to b's pipe, which adds them in the order they were
// numbered.
func (b *builder) addStack(pid int32, addrs []uint64, ret bool) StackID {
	id := b.nStacks
	b.nStacks++
	if b.pipe != nil {
		b.pipe.push(pid, addrs, ret)
	} else {
		b.newStack(pid, addrs, ret)
	}
	return id
}

// newStack adds the frames of addrs (leaf first, with context markers) as
// a new stack. Addresses before any marker are user addresses, as Sysprof
// assumes for backtrace()-style stacks. ret says the first user address
// is a return address too (an allocation's stack starts at the
// allocator's caller).
func (b *builder) newStack(pid int32, addrs []uint64, ret bool) {
	pf := b.lastFrames
	if pf == nil || b.lastPID != pid {
		pf = b.frames[pid]
		if pf == nil {
			pf = &procFrames{}
			b.frames[pid] = pf
		}
		b.lastPID, b.lastFrames = pid, pf
	}
	kernel, first := false, true
	for _, a := range addrs {
		if capture.IsContext(a) {
			switch a {
			case capture.ContextKernel, capture.ContextGuestKernel, capture.ContextHV:
				kernel = true
			default:
				kernel = false
			}
			first = true
			continue
		}
		if a == 0 {
			continue
		}
		// The first user address is where the thread was; the others
		// are return addresses.
		caller := !kernel && (!first || ret)
		first = false
		if caller && capture.ImpossibleReturn(a) {
			continue
		}
		kind := uint64(b2i(kernel) | b2i(caller)<<1)
		h := (a ^ uint64(pid)*0x9e3779b97f4a7c15 ^ kind<<62) * 0xff51afd7ed558ccd
		r := &b.recent[h>>(64-recentBits)]
		if r.addr == a && r.pid == pid && r.kind == uint8(kind) && r.fid >= 0 {
			b.p.stackFrames = append(b.p.stackFrames, r.fid)
			continue
		}
		m := pf.of(kernel, caller)
		fid, ok := (*m)[a]
		if !ok {
			if *m == nil {
				*m = b.newFrameMap(kind)
			}
			fid = b.nFrames
			b.nFrames++
			(*m)[a] = fid
			b.kindFrames[kind]++
		}
		*r = recentFrame{addr: a, pid: pid, kind: uint8(kind), fid: fid}
		b.p.stackFrames = append(b.p.stackFrames, fid)
	}
	b.p.stackStart = append(b.p.stackStart, int32(len(b.p.stackFrames)))
}

// newFrameMap returns a process's map of frames of a kind (an index of
// kindFrames), sized for as many as the processes before it had on
// average: the maps grew from empty, and their rehashing was a fifth of
// a small capture's interning.
func (b *builder) newFrameMap(kind uint64) map[uint64]FrameID {
	hint := 0
	if n := b.kindMaps[kind]; n > 0 {
		hint = min(b.kindFrames[kind]/n, 1<<12)
	}
	b.kindMaps[kind]++
	return make(map[uint64]FrameID, hint)
}

// recentBits sizes builder.recent: 4096 frames, 96 kB.
const recentBits = 12

const recentFrames = 1 << recentBits

// recentStack is a stack of builder.recentStacks: its key and id (-1:
// none).
type recentStack struct {
	key stackKey
	id  StackID
}

// recentFrame is a frame of builder.recent: its key and id (-1: none).
type recentFrame struct {
	addr uint64
	pid  int32
	kind uint8 // 1: kernel, 2: caller
	fid  FrameID
}

// keysOfFrames returns the keys of the frames b's processes' maps hold,
// by frame id. The maps are all the keys reading needs: a list of them
// kept beside, for this, was a seventh of the live heap at the end of
// reading a 60 s capture (15 MB). The processes are taken in parts, side
// by side: one goroutine took 21 to 28 ms over that capture's 709 k.
func (b *builder) keysOfFrames() []frameKey {
	// Room for the frames of earlier images (see Profile.splitImages):
	// appended to the keys of a 60 s capture of builds, 2.8 k frames
	// copied the 573 k (13 ms). Unused, the room is never touched.
	keys := make([]frameKey, b.nFrames, b.nFrames+b.nFrames/32+16)
	type proc struct {
		pid int32
		f   *procFrames
	}
	procs := make([]proc, 0, len(b.frames))
	for pid, pf := range b.frames {
		procs = append(procs, proc{pid, pf})
	}
	parallelItems(len(procs), min(runtime.GOMAXPROCS(0), 8, int(b.nFrames)>>14+1), func(j int) {
		pid, pf := procs[j].pid, procs[j].f
		for kind, m := range [...]map[uint64]FrameID{pf.user, pf.caller, pf.kernel} {
			k := frameKey{PID: pid, Kernel: kind == 2, Caller: kind == 1}
			for a, id := range m {
				k.Addr = a
				keys[id] = k
			}
		}
	})
	return keys
}
