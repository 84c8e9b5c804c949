package capture

import (
	"bytes"
	"io"
	"testing"
)

// TestAddFileAllocations checks that embedding a file allocates its two
// chunk buffers once, not one buffer a chunk: the end of a recording
// embeds megabytes (kallsyms, the symbol bundle, the source lines). Bytes
// in memory are written from where they are, with no buffer at all: a
// recording embeds a small file (mountinfo) for each process.
func TestAddFileAllocations(t *testing.T) {
	w, err := NewWriter(io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	data := make([]byte, 64*fileChunkSize+100)
	h := FrameHeader{CPU: -1, PID: -1}
	allocs := testing.AllocsPerRun(10, func() {
		if err := w.AddFile(h, "/f", bytes.NewReader(data)); err != nil {
			t.Fatal(err)
		}
	})
	if allocs > 8 {
		t.Errorf("embedding %d bytes (%d chunks) took %.0f allocations, want at most 8", len(data), len(data)/fileChunkSize+1, allocs)
	}
	for _, n := range []int{0, 100, fileChunkSize, 3*fileChunkSize + 1} {
		allocs := testing.AllocsPerRun(10, func() {
			if err := w.AddFileBytes(h, "/f", data[:n]); err != nil {
				t.Fatal(err)
			}
		})
		if allocs > 0 {
			t.Errorf("AddFileBytes of %d bytes took %.0f allocations, want none", n, allocs)
		}
	}
}
