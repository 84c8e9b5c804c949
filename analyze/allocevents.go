package analyze

// allocEvents are the ALLOCATION frames read, in file order, in chunks
// of allocChunk events (the last one grows by append): one table grown
// by append was copied over and over as a --memprof capture's millions
// of frames were read (0.16 s of a 4 M-event report), and sizing it
// ahead waited for the scout, which counts the frames while the reader
// is already reading them.
type allocEvents struct {
	chunks [][]allocEvent
	n      int
}

// allocChunk is the number of events of each full chunk: 1.3 MB.
const (
	allocChunkBits = 15
	allocChunk     = 1 << allocChunkBits
)

// add appends e.
func (a *allocEvents) add(e allocEvent) {
	if len(a.chunks) == 0 || len(a.chunks[len(a.chunks)-1]) == allocChunk {
		var c []allocEvent
		if len(a.chunks) > 0 {
			c = make([]allocEvent, 0, allocChunk)
		}
		a.chunks = append(a.chunks, c)
	}
	last := &a.chunks[len(a.chunks)-1]
	*last = append(*last, e)
	a.n++
}

// len returns the number of events.
func (a *allocEvents) len() int { return a.n }

// at returns event i.
func (a *allocEvents) at(i int) *allocEvent {
	return &a.chunks[i>>allocChunkBits][i&(allocChunk-1)]
}
