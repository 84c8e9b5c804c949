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

// hashLocations returns, by frame of v, its process mapping (see
// [wireWriter.mapping]) and a 128-bit hash of its locKey (two
// 64-bit hashes of independent seeds: two keys share one with a chance
// below 10^-26 for a million locations), computed side by side. A map of
// the keys themselves, 40 bytes and a file name each, missed the caches
// at every lookup of the export's location pass, which is its critical
// path; that pass now looks up 16 bytes.
func hashLocations(v *analyze.View) ([][2]uint64, []*analyze.Mapping) {
	out := make([][2]uint64, len(v.Frames))
	ms := make([]*analyze.Mapping, len(v.Frames))
	seeds := [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()}
	parts := min(runtime.GOMAXPROCS(0), 8, len(v.Frames)>>12+1)
	var wg sync.WaitGroup
	for p := range parts {
		lo, hi := len(v.Frames)*p/parts, len(v.Frames)*(p+1)/parts
		wg.Go(func() {
			// Each mapping's key is hashed once.
			maps := make(map[*analyze.Mapping][2]uint64)
			for i := lo; i < hi; i++ {
				fr := &v.Frames[i]
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
		})
	}
	wg.Wait()
	return out, ms
}
