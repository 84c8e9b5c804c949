package capture

import (
	"errors"
	"io"
	"os"
	"syscall"
	"testing"
)

// fullFile is a file that accepts limit bytes and then fails like a full
// disk, part way through a write.
type fullFile struct {
	*os.File
	limit int64
}

func (f *fullFile) Write(p []byte) (int, error) {
	pos, _ := f.Seek(0, io.SeekCurrent)
	if pos+int64(len(p)) <= f.limit {
		return f.File.Write(p)
	}
	n, _ := f.File.Write(p[:max(f.limit-pos, 0)])
	return n, &os.PathError{Op: "write", Path: f.Name(), Err: syscall.ENOSPC}
}

func TestFullDiskLeavesWholeFrames(t *testing.T) {
	path := t.TempDir() + "/c.syscap"
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w, err := NewWriterWithOptions(&fullFile{File: f, limit: 600_000}, WriterOptions{StartTime: 1})
	if err != nil {
		t.Fatal(err)
	}
	var werr error
	written := 0
	for i := 0; werr == nil && i < 100_000; i++ {
		werr = w.WriteFrame(&Sample{FrameHeader: FrameHeader{Time: int64(i + 2)}, TID: 1, Addrs: []uint64{1, 2, 3, uint64(i)}})
		if werr == nil {
			written++
		}
	}
	if !errors.Is(werr, syscall.ENOSPC) {
		t.Fatalf("err = %v, want ENOSPC", werr)
	}
	// Once failed, the Writer refuses every frame, on its fast paths too,
	// rather than buffering frames it can never write.
	if err := w.WriteFrame(&Sample{Addrs: []uint64{1}}); !errors.Is(err, syscall.ENOSPC) {
		t.Errorf("sample after the error: %v, want ENOSPC", err)
	}
	if err := w.AddMark(1, 1, 1, "g", "n", "m"); !errors.Is(err, syscall.ENOSPC) {
		t.Errorf("mark after the error: %v, want ENOSPC", err)
	}
	if err := w.Close(); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("close: %v", err)
	}
	b, _ := os.ReadFile(path)
	hdr, frames, err := readAll(t, b)
	if err != nil {
		t.Fatalf("capture does not end on a frame boundary: %v", err)
	}
	if len(frames) == 0 || len(frames) > written {
		t.Fatalf("read %d frames, wrote %d before the error", len(frames), written)
	}
	last := frames[len(frames)-1].(*Sample)
	if last.Addrs[3] != uint64(len(frames)-1) {
		t.Fatalf("frames out of order")
	}
	if hdr.EndTime < last.Time {
		t.Errorf("header end %d before last frame %d", hdr.EndTime, last.Time)
	}
}
