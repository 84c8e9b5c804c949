package record

import (
	"math/bits"
	"math/rand/v2"
	"slices"
)

// objHits are the file offsets of an object that samples hit, each once
// whichever processes sampled it (the Go toolchain's binaries over a
// compile loop, hundreds of processes each), with whether its source
// frames are wanted. They are kept in a set of open addressing, which
// every address of every process probes once: nearly every probe finds
// the offset there already. A Go map took 100 ms of the bundle's 640 in
// CPU profiles of seven warm recordings over a compile loop; appending
// them all and sorting whenever they doubled, a fifth of
// BenchmarkBundleToolchain's time went to sorting the repeats. As in
// addrTable, the hash multiplies by an odd number drawn for each set, so
// that a process cannot choose addresses that crowd one run of slots.
type objHits struct {
	// slots holds the offsets, 0 in an empty slot; offset 0 is zero.
	slots []uint64
	// lines has bit i set when slot i's frames are wanted.
	lines []uint64
	n     int
	mul   uint64
	shift uint8
	// zero and zeroLine say whether offset 0 was noted, and whether its
	// frames are wanted.
	zero, zeroLine bool
}

// objHitsSlots is the number of slots of a set when made.
const objHitsSlots = 1024

// add notes file offset off, whose frames are wanted if line is set.
func (h *objHits) add(off uint64, line bool) {
	if off == 0 {
		h.zero, h.zeroLine = true, h.zeroLine || line
		return
	}
	if h.slots == nil {
		h.make(objHitsSlots)
	}
	mask := uint64(len(h.slots) - 1)
	for i := (off * h.mul) >> h.shift; ; i = (i + 1) & mask {
		switch h.slots[i] {
		case off:
		case 0:
			h.slots[i] = off
			h.n++
		default:
			continue
		}
		if line {
			h.lines[i>>6] |= 1 << (i & 63)
		}
		if h.n > len(h.slots)*3/4 {
			h.grow()
		}
		return
	}
}

// make gives h size empty slots, a power of two.
func (h *objHits) make(size int) {
	shift := uint8(64)
	for s := size; s > 1; s >>= 1 {
		shift--
	}
	h.slots, h.lines = make([]uint64, size), make([]uint64, (size+63)/64)
	h.mul, h.shift, h.n = rand.Uint64()|1, shift, 0
}

// grow moves h's offsets into twice the slots.
func (h *objHits) grow() {
	slots, lines := h.slots, h.lines
	h.make(2 * len(slots))
	for i, off := range slots {
		if off != 0 {
			h.add(off, lines[i>>6]&(1<<(i&63)) != 0)
		}
	}
}

// offsets returns the offsets noted, sorted, and those whose frames are
// wanted, sorted, each in a slice of its own length (the names of the
// offsets keep theirs); h holds none after.
func (h *objHits) offsets() (all, lines []uint64) {
	n, nl := h.n, 0
	for _, w := range h.lines {
		nl += bits.OnesCount64(w)
	}
	if h.zero {
		n++
		all = append(make([]uint64, 0, n), 0)
	} else {
		all = make([]uint64, 0, n)
	}
	if h.zeroLine {
		nl++
		lines = append(make([]uint64, 0, nl), 0)
	} else {
		lines = make([]uint64, 0, nl)
	}
	for i, off := range h.slots {
		if off != 0 {
			all = append(all, off)
			if h.lines[i>>6]&(1<<(i&63)) != 0 {
				lines = append(lines, off)
			}
		}
	}
	slices.Sort(all)
	slices.Sort(lines)
	*h = objHits{}
	return all, lines
}
