package record

import (
	"cmp"
	"slices"

	"nsprof/container"
)

// symProc is what the symbolizer knows of one process. Its embedded
// symGen is its current image.
type symProc struct {
	cp      *container.Process // nil until opened, or if it could not be
	tried   bool               // whether opening cp was attempted
	openErr error
	symGen
	// other are the executable mappings of no file: anonymous memory
	// (JIT code), deleted files, [vsyscall].
	other []span
	// jit are the jitdumps the current image mapped, open, read once
	// the recording ends (see [symbolizer.jitMap]).
	jit []jitDump
	// jitUnwind is the call frame information jit gave, read while
	// recording for the unwinder (see dwarfUnwinder.jitModule).
	jitUnwind jitUnwind
	// kernel are the kernel addresses sampled; kernelPacked those
	// sampled before the process's exit was packed, sorted (8 bytes
	// an address, where the map took about three times that).
	kernel       map[uint64]struct{}
	kernelPacked []uint64
	nspid        int
	owns         bool // some object's debug search goes through cp
	// stale says cp was opened before the process's last exec.
	stale bool
	// mapsTried says the unwinder looked its mappings up itself.
	mapsTried bool
	// exitAt is the time of the process's EXIT record, 0 while it
	// lives; exitMaps is how many of maps it had then (see
	// symbolizer.reborn).
	exitAt   int64
	exitMaps int
	// prev are the images exec replaced, oldest first, with the
	// addresses sampled in them: a child forked by a shell or by `go`
	// runs its parent's image until it execs, and those samples are
	// named from the files that were mapped then.
	prev []symGen
}

// symGen is one image of a process: its mappings and the user addresses
// sampled while it ran.
type symGen struct {
	maps []symMap
	// user are the user addresses sampled, each with the latest time
	// a stack first showing it was sampled (samples of one process come
	// from several CPUs' rings, so an exec may be read after samples of
	// the new image, or before samples of the old one), and whether its
	// source frames are bundled: those of where threads were, and of
	// the calls (return address - 1) that reports name callers from. A
	// return address itself is named (Sysprof looks it up as it is) but
	// needs no frames. One table, so that noting an address is one
	// probe.
	user *addrTable
	// packed and flags hold the user addresses instead of user once the
	// process has exited (pack): sorted, with their line and call flags
	// (packLine, packCall) and without times, 9 bytes an address rather
	// than the table's 24 a slot (a quarter of them or more empty).
	// Noting an address unpacks them.
	packed []uint64
	flags  []uint8
	// until is the time of the exec that replaced the image; 0 for the
	// current one.
	until int64
}

// userAddr is what is known of a sampled user address: when it was last
// first seen in a stack, whether its source frames are wanted, and
// whether it is a return address whose call (the address before it) is
// wanted with its frames too. The call is noted with its return address
// while recording, one table entry for both, and given its own entry by
// expand when the recording ends.
type userAddr struct {
	t    int64
	line bool
	call bool
}

// find returns the mapping of g holding address a; later mappings of a
// range replace earlier ones.
func (g *symGen) find(a uint64) *symMap {
	for i := len(g.maps) - 1; i >= 0; i-- {
		if m := &g.maps[i]; a >= m.start && a < m.end {
			return m
		}
	}
	return nil
}

// note adds user address a, seen at time t, with its source frames
// wanted when line is set, and its call's (a-1) when call is.
func (g *symGen) note(a uint64, t int64, line, call bool) {
	g.unpack()
	if g.user == nil {
		g.user = newAddrTable(0)
	}
	g.user.note(a, t, line, call)
}

// Flags of a packed address.
const (
	packLine uint8 = 1 << iota
	packCall
)

// packFlags returns the flags of a packed address noted as u.
func packFlags(u userAddr) uint8 {
	var f uint8
	if u.line {
		f |= packLine
	}
	if u.call {
		f |= packCall
	}
	return f
}

// pack moves the user addresses from the table into the sorted slices.
func (g *symGen) pack() {
	if g.user.Len() == 0 {
		g.user = nil
		return
	}
	n := len(g.packed)
	// Each address with its flags in one word, sorted as the address:
	// looking each up in the map again for its flags, once sorted, was
	// 30 ms of the 110 packing took in CPU profiles of seven
	// compile-loop recordings. An address
	// too large for the flags beside it (never a user address) has them
	// looked up so.
	g.packed = slices.Grow(g.packed, g.user.Len())
	g.flags = slices.Grow(g.flags, g.user.Len())
	keyed := true
	for a, u := range g.user.all {
		keyed = keyed && a < 1<<62
		g.packed = append(g.packed, a<<2|uint64(packFlags(u)))
	}
	if !keyed {
		g.packed = g.packed[:n]
		for a := range g.user.all {
			g.packed = append(g.packed, a)
		}
	}
	slices.Sort(g.packed[n:])
	for i, k := range g.packed[n:] {
		if keyed {
			g.packed[n+i] = k >> 2
			g.flags = append(g.flags, uint8(k&3))
		} else {
			u, _ := g.user.get(k)
			g.flags = append(g.flags, packFlags(u))
		}
	}
	g.user = nil
	if n > 0 {
		g.sortPacked()
	}
}

// sortPacked sorts the packed addresses, merging the flags of repeats.
func (g *symGen) sortPacked() {
	idx := make([]int, len(g.packed))
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, b int) int { return cmp.Compare(g.packed[a], g.packed[b]) })
	addrs := make([]uint64, 0, len(idx))
	flags := make([]uint8, 0, len(idx))
	for _, i := range idx {
		if k := len(addrs) - 1; k >= 0 && addrs[k] == g.packed[i] {
			flags[k] |= g.flags[i]
			continue
		}
		addrs, flags = append(addrs, g.packed[i]), append(flags, g.flags[i])
	}
	g.packed, g.flags = addrs, flags
}

// unpack moves packed addresses back into the table, as noted at time 0
// (before anything a later exec can follow: the process had exited).
func (g *symGen) unpack() {
	if g.packed == nil {
		return
	}
	if g.user == nil {
		g.user = newAddrTable(len(g.packed))
	}
	for i, a := range g.packed {
		g.user.note(a, 0, g.flags[i]&packLine != 0, g.flags[i]&packCall != 0)
	}
	g.packed, g.flags = nil, nil
}

// expand gives the calls noted with their return addresses entries of
// their own, with their frames wanted, and packs the addresses: the
// calls are taken from the packed form, where a process written out
// (procSpill) or packed at its exit already holds its addresses, so
// that one with no call left to expand costs a pass over its flags.
// Unpacking them into the map to expand it, and sorting them again to
// pack it, was three quarters of what packing the exited processes of a
// compile loop cost, and done again for each process at the end.
func (g *symGen) expand() {
	g.pack()
	var calls []uint64 // in the order of packed: sorted
	for i, f := range g.flags {
		if f&packCall != 0 {
			g.flags[i] = f &^ packCall
			if a := g.packed[i]; a > 0 {
				calls = append(calls, a-1)
			}
		}
	}
	if len(calls) > 0 {
		g.packed, g.flags = mergeLines(g.packed, g.flags, calls)
	}
}

// mergeLines returns the sorted addresses packed (with their flags)
// and the sorted addresses lines, whose frames are wanted, as one
// sorted list without repeats: an address in both keeps its flags,
// with packLine added.
func mergeLines(packed []uint64, flags []uint8, lines []uint64) ([]uint64, []uint8) {
	out := make([]uint64, 0, len(packed)+len(lines))
	outFlags := make([]uint8, 0, len(packed)+len(lines))
	i, j := 0, 0
	for i < len(packed) || j < len(lines) {
		switch {
		case j == len(lines) || i < len(packed) && packed[i] < lines[j]:
			out, outFlags = append(out, packed[i]), append(outFlags, flags[i])
			i++
		case i == len(packed) || lines[j] < packed[i]:
			a := lines[j]
			if k := len(out) - 1; k >= 0 && out[k] == a {
				outFlags[k] |= packLine // a repeat of lines
			} else {
				out, outFlags = append(out, a), append(outFlags, packLine)
			}
			j++
		default: // the same address
			out, outFlags = append(out, packed[i]), append(outFlags, flags[i]|packLine)
			i++
			j++
		}
	}
	return out, outFlags
}

// genAt returns the image p ran at time t.
func (p *symProc) genAt(t int64) *symGen {
	for i := range p.prev {
		if t < p.prev[i].until {
			return &p.prev[i]
		}
	}
	return &p.symGen
}

// shadowed says whether one of gens maps address a.
func shadowed(gens []symGen, a uint64) bool {
	for i := range gens {
		if gens[i].find(a) != nil {
			return true
		}
	}
	return false
}

// expand gives the calls noted in each of p's images entries of their own,
// and packs their addresses (symGen.expand).
func (p *symProc) expand() {
	for _, g := range p.gensRef() {
		g.expand()
	}
}

// pack packs the addresses of each of p's images (symGen.pack).
func (p *symProc) pack() {
	for _, g := range p.gensRef() {
		g.pack()
	}
	if len(p.kernel) > 0 {
		p.kernelPacked = p.kernelAddrs()
	}
	p.kernel = nil
}

// sampledKernel reports whether any process's stacks, or the idle
// task's, held a kernel address.
func (s *symbolizer) sampledKernel() bool {
	if len(s.idle) > 0 {
		return true
	}
	for _, p := range s.procs {
		if len(p.kernel) > 0 || len(p.kernelPacked) > 0 {
			return true
		}
	}
	return false
}

// kernelAddrs returns the kernel addresses p sampled, sorted, once each.
func (p *symProc) kernelAddrs() []uint64 {
	if len(p.kernel) == 0 {
		return p.kernelPacked
	}
	out := append(slices.Clip(p.kernelPacked), sortedKeys(p.kernel)...)
	slices.Sort(out)
	return slices.Compact(out)
}

// gensRef returns pointers to p's images, the replaced ones first.
func (p *symProc) gensRef() []*symGen {
	out := make([]*symGen, 0, len(p.prev)+1)
	for i := range p.prev {
		out = append(out, &p.prev[i])
	}
	return append(out, &p.symGen)
}

// gens returns p's images, the replaced ones first and the current one
// last.
func (p *symProc) gens() []symGen {
	return append(p.prev[:len(p.prev):len(p.prev)], p.symGen)
}
