package analyze

import (
	"nsprof/capture"
)

// scout walks a capture held in memory ahead of its reading, on a
// goroutine of its own: it counts the frames that size the builder's
// tables (see [countSamples]) and starts decoding the bundle files as soon
// as it has found them (see [startBundle]). Reading had waited for that
// walk of the whole file, and for the tables sized by it, before reading
// the first frame: a tenth of the report of a 15 s system capture, with
// the second CPU idle for most of it.
type scout struct {
	done chan struct{}
	// n, pre and err are set when done is closed: the sizes, the bundle
	// being decoded (nil when the walk faulted before it), and the
	// fault of a mapped file that shrank under the walk.
	n   sizes
	pre *earlyBundle
	err error
}

// scoutAt, when a multiple of 4096, is the number of frames read after
// which loading waits for the scout (for tests: the stacks are then
// interned from that frame on as they would be had the scout ended
// there).
var scoutAt = -1

// startScout starts walking data, read under a fault guard of its own
// (see [capture.ReadMapped]): the guard is the calling goroutine's only.
// With mapped set, data is a mapping from [capture.MapFile], which must
// stay mapped until [scout.wait] returns, and whose pages the walk lets go
// behind it: reading the whole file ahead of the frames' reading had held
// it all in memory.
func startScout(data []byte, mapped bool) *scout {
	sc := &scout{done: make(chan struct{})}
	go func() {
		defer close(sc.done)
		sc.err = capture.ReadMapped(data, func() error {
			n, bundle := countSamples(data, mapped)
			n.slots += n.addrs
			sc.n = n
			sc.pre = startBundle(bundle, n.slots)
			if mapped {
				// What the walk read since it last let pages go, and
				// the bundle it copied.
				capture.DropMapped(data, 0, int64(len(data)))
			}
			return nil
		})
	}()
	return sc
}

// ready reports whether the walk has ended, without waiting.
func (sc *scout) ready() bool {
	select {
	case <-sc.done:
		return true
	default:
		return false
	}
}

// wait waits for the walk to end; the bundle may still be decoding.
func (sc *scout) wait() { <-sc.done }

// reserve grows b's tables to what the capture's sizes n call for, once
// some frames were read into them. It must be called before the stacks'
// frames go to a pipe (see [builder.startPipe]): the tables are the
// caller's.
//
// The samples get one slice. What was
// read so far says how many distinct stacks, and frames of them, the
// samples make: their tables are sized for the whole capture at that rate
// and 15 % more, at least for as many stacks as half the samples and half
// their addresses, at most every sample's. (The stacks' index is one map
// a process: see [builder.procStacks].)
// Sized for every sample, the tables of a 60 s system capture held 10 and
// 7 MB more than its 225 k stacks of 479 k samples needed; sized at half,
// the stack frames of a 15 s capture outgrew their table twice, and the
// copies, with the collector's work they brought, were a third of adding
// the frames.
func (b *builder) reserve(n sizes) {
	p := b.p
	b.unsized = false
	samples, slots := n.samples, n.slots
	at := func(have, read, total, least, most int) int {
		if read > 0 {
			least = max(least, int(float64(have)*float64(total)/float64(read)*1.15))
		}
		return min(least, max(most, have))
	}
	p.stackStart = grow(p.stackStart, at(len(p.stackStart), int(b.nSamples), samples, samples/2+1, samples+1))
	p.stackFrames = grow(p.stackFrames, at(len(p.stackFrames), int(b.addrSlots), slots, n.addrs/2, slots))
	b.stackBound, b.stackRate = n.procStacks, 0.5
	if b.nSamples > 0 {
		b.stackRate = min(1.15*float64(b.nStacks)/float64(b.nSamples), 1)
	}
	read := len(b.chunk)
	for _, c := range b.chunks {
		read += len(c)
	}
	if (len(b.chunks) > 0 || n.samples > cap(b.chunk)) && n.samples >= read {
		// All samples in one slice, as when sized from the start: the
		// profile takes it as it is (see [builder.finish]).
		c := make([]Sample, 0, n.samples)
		for _, s := range b.chunks {
			c = append(c, s...)
		}
		b.chunk, b.chunks = append(c, b.chunk...), nil
	}
}

// grow returns s with room for at least n elements in all. slices.Grow
// writes zeros over all the room it adds; make writes them only where the
// heap reuses memory, so the fresh pages of a table sized for the whole
// capture are touched only as they are used (the 60 s capture's report
// 3 % faster).
func grow[S ~[]E, E any](s S, n int) S {
	if n <= cap(s) {
		return s
	}
	t := make(S, len(s), n)
	copy(t, s)
	return t
}
