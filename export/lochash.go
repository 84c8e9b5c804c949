package export

import (
	"hash/maphash"
	"runtime"
	"sync"

	"nsprof/analyze"
)

// locKey identifies a location: frames of several processes at one
// address of one mapping (a file mapped at the same place, as programs
// built without PIE are, or the kernel) and named the same are one
// location. A capture of many processes of the same programs had five
// times as many frames as places in code, each written as a location of
// its own. Frames named the same have the same function, file and line
// and, with inlined calls, the very [analyze.Location] (frames at the same
// code share it: see [analyze.Profile.Symbolize]); locations without
// inlined calls are compared by value, for the same output from one run
// to the next.
//
// The mapping is its [mappingKey]'s hash (or that of the kernel's, or
// of none), as the mapping's index is given only when a location first
// needs it.
type locKey struct {
	mapping [2]uint64
	addr    uint64
	fn      analyze.FuncID
	line    int
	inline  *analyze.Location
	file    string
}

// The mapping of a locKey of no mapping, and of the kernel's.
var (
	noMapping   = [2]uint64{0, 0}
	kernelClass = [2]uint64{1, 0}
)

// sameLocations returns, by frame of v, the first frame (in frame order)
// of the same location, and the frame's process mapping (see
// [wireWriter.mapping]). Frames are told apart by a 128-bit hash of
// their locKey (two 64-bit hashes of independent seeds: two keys share
// one with a chance below 10^-26 for a million locations). Both steps
// run side by side: the frames are hashed in ranges, then matched in
// shards of the hashes. The export's location pass, its critical path,
// had looked up every frame's key in one map (40 bytes and a file name
// a key, then its 16-byte hash): a cache miss for each of the 15 s
// capture's half a million frames; it now reads a slice. It also returns
// the number of distinct locations, which sizes the export's tables.
func sameLocations(v *analyze.View) ([]int32, []*analyze.Mapping, int) {
	n := len(v.Frames)
	hashes := make([][2]uint64, n)
	ms := make([]*analyze.Mapping, n)
	seeds := [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()}
	parts := min(runtime.GOMAXPROCS(0), 8, n>>12+1)
	var wg sync.WaitGroup
	for p := range parts {
		lo, hi := n*p/parts, n*(p+1)/parts
		wg.Go(func() { hashRange(v, hashes[lo:hi], ms[lo:hi], lo, seeds) })
	}
	wg.Wait()
	first := make([]int32, n)
	distinct := make([]int, parts)
	for p := range parts {
		wg.Go(func() {
			// Shard p holds the hashes whose low bits are p's.
			seen := make(map[[2]uint64]int32, n/parts/2)
			for i, h := range hashes {
				if int(h[1]%uint64(parts)) != p {
					continue
				}
				j, ok := seen[h]
				if !ok {
					j = int32(i)
					seen[h] = j
				}
				first[i] = j
			}
			distinct[p] = len(seen)
		})
	}
	wg.Wait()
	sum := 0
	for _, d := range distinct {
		sum += d
	}
	return first, ms, sum
}

// hashRange hashes the locKeys of v's frames from lo on into out, and
// puts each one's process mapping in ms.
func hashRange(v *analyze.View, out [][2]uint64, ms []*analyze.Mapping, lo int, seeds [2]maphash.Seed) {
	// Each mapping's key is hashed once.
	maps := make(map[*analyze.Mapping][2]uint64)
	for i := range out {
		fr := &v.Frames[lo+i]
		k := locKey{mapping: noMapping, addr: fr.Addr, fn: fr.Func, line: fr.Loc.Line, file: fr.Loc.File}
		if len(fr.Loc.Inline) > 0 {
			k.inline = fr.Loc
		}
		if fr.Kernel {
			k.mapping = kernelClass
		} else if m := v.Mapping(fr.PID, fr.Addr); m != nil {
			ms[i] = m
			h, ok := maps[m]
			if !ok {
				mk := mappingKey{m.Start, m.End, m.Offset, m.File, m.BuildID}
				// The top bit keeps them apart from those two.
				h = [2]uint64{maphash.Comparable(seeds[0], mk) | 1<<63, maphash.Comparable(seeds[1], mk)}
				maps[m] = h
			}
			k.mapping = h
		}
		out[i] = [2]uint64{maphash.Comparable(seeds[0], k), maphash.Comparable(seeds[1], k)}
	}
}
