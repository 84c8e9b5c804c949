package capture

import (
	"bytes"
	"encoding/binary"
	"io"
	"os"
	"slices"
	"syscall"
	"testing"
)

// nativeFrames returns allocs encoded as AddAllocation writes them in the
// machine's byte order, cut into segments of about seg bytes of whole
// frames.
func nativeFrames(t *testing.T, allocs []Allocation, seg int) [][]byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := NewWriterWithOptions(&buf, WriterOptions{ByteOrder: binary.NativeEndian})
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range allocs {
		if err := w.AddAllocation(a.Time, a.CPU, a.PID, a.TID, a.Addr, a.Size, a.Addrs); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	b := buf.Bytes()[HeaderSize:]
	var segs [][]byte
	for len(b) > 0 {
		k := frameCut(b, seg)
		if k == 0 {
			k = int(binary.NativeEndian.Uint16(b))
		}
		segs = append(segs, b[:k])
		b = b[k:]
	}
	return segs
}

func testAllocs(n int) []Allocation {
	out := make([]Allocation, n)
	for i := range out {
		a := Allocation{FrameHeader: FrameHeader{CPU: -1, PID: 100, Time: int64(1000 + i)}, TID: 101 + int32(i%3), Addr: 0x7f0000 + uint64(16*i)}
		if i%2 == 0 {
			a.Size = int64(i + 1)
			a.Addrs = []uint64{0x401000 + uint64(i%7), 0x402000, 0x403000}[:1+i%3]
		}
		out[i] = a
	}
	return out
}

// TestAddAllocationFrames writes frames laid out by the caller after a
// MARK, through each of AddAllocationFrames's paths (one writev to a
// regular file; copies into the buffer of a Writer on a pipe-like
// destination, flushed between frames; decoding for a Writer of the
// other byte order), and reads them all back, in order, with the count
// and the end time the Writer keeps.
func TestAddAllocationFrames(t *testing.T) {
	allocs := testAllocs(20000) // about 1 MB: several buffers
	other := binary.ByteOrder(binary.BigEndian)
	if nativeBig {
		other = binary.LittleEndian
	}
	for _, tc := range []struct {
		name  string
		file  bool
		order binary.ByteOrder
	}{
		{"writev to a file", true, nil},
		{"copied to the buffer", false, nil},
		{"other byte order", true, other},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var dst io.ReadWriter = new(bytes.Buffer)
			if tc.file {
				f, err := os.Create(t.TempDir() + "/c.syscap")
				if err != nil {
					t.Fatal(err)
				}
				defer f.Close()
				dst = f
			}
			w, err := NewWriterWithOptions(dst, WriterOptions{StartTime: 1, ByteOrder: tc.order})
			if err != nil {
				t.Fatal(err)
			}
			if err := w.AddMark(5, 100, 0, "g", "first", ""); err != nil {
				t.Fatal(err)
			}
			segs := nativeFrames(t, allocs, 300_000)
			if err := w.AddAllocationFrames(segs, len(allocs), allocs[len(allocs)-1].Time); err != nil {
				t.Fatal(err)
			}
			if err := w.AddMark(6, 100, 0, "g", "last", ""); err != nil {
				t.Fatal(err)
			}
			if got := w.Count(TypeAllocation); got != uint64(len(allocs)) {
				t.Errorf("Count %d, want %d", got, len(allocs))
			}
			if got, want := w.EndTime(), allocs[len(allocs)-1].Time; got != want {
				t.Errorf("EndTime %d, want %d", got, want)
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			if f, ok := dst.(*os.File); ok {
				f.Seek(0, io.SeekStart)
			}
			data, err := io.ReadAll(dst)
			if err != nil {
				t.Fatal(err)
			}
			_, got, err := readAll(t, data)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(allocs)+2 {
				t.Fatalf("%d frames, want %d", len(got), len(allocs)+2)
			}
			if m, ok := got[0].(*Mark); !ok || m.Name != "first" {
				t.Errorf("first frame %+v", got[0])
			}
			if m, ok := got[len(got)-1].(*Mark); !ok || m.Name != "last" {
				t.Errorf("last frame %+v", got[len(got)-1])
			}
			for i, a := range allocs {
				g, ok := got[i+1].(*Allocation)
				if !ok || g.FrameHeader != a.FrameHeader || g.TID != a.TID || g.Addr != a.Addr || g.Size != a.Size || !slices.Equal(g.Addrs, a.Addrs) {
					t.Fatalf("frame %d: %+v, want %+v", i+1, got[i+1], a)
				}
			}
		})
	}
}

// TestLastBoundaryChunks: after a write of several chunks failed part
// way, the file is cut at the end of the last whole frame, whichever
// chunk it is in.
func TestLastBoundaryChunks(t *testing.T) {
	var w Writer
	segs := nativeFrames(t, testAllocs(6), 130) // frames of 48 and 64 bytes
	lens := func(s []byte) (out []int) {
		for len(s) > 0 {
			l := int(binary.NativeEndian.Uint16(s))
			out, s = append(out, l), s[l:]
		}
		return out
	}
	buf := segs[0]
	rest := segs[1:]
	chunks := append([][]byte{buf}, rest...)
	total := 0
	var ends []int
	for _, c := range chunks {
		for _, l := range lens(c) {
			total += l
			ends = append(ends, total)
		}
	}
	for n := 0; n <= total; n++ {
		want := 0
		for _, e := range ends {
			if e <= n {
				want = e
			}
		}
		if got := w.lastBoundary(1000, chunks, n); got != 1000+int64(want) {
			t.Fatalf("%d bytes written: boundary %d, want %d", n, got-1000, want)
		}
	}
}

// TestPreallocationFreed: a Writer on a regular file reserves blocks
// ahead of its writes, and Close frees those beyond the capture's end,
// leaving the file as long as what was written.
func TestPreallocationFreed(t *testing.T) {
	path := t.TempDir() + "/c.syscap"
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w, err := NewWriterWithOptions(f, WriterOptions{StartTime: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.AddAllocationFrames(nativeFrames(t, testAllocs(20000), 300_000), 20000, 20999); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	st, _ := f.Stat()
	blocks := func() int64 {
		var s syscall.Stat_t
		if err := syscall.Fstat(int(f.Fd()), &s); err != nil {
			t.Fatal(err)
		}
		return s.Blocks * 512
	}
	if w.noPrealloc {
		t.Skipf("the file system of %s refuses fallocate", path)
	}
	if b := blocks(); b < st.Size()+preallocMin {
		t.Errorf("%d bytes written, %d allocated: nothing reserved ahead", st.Size(), b)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	after, _ := f.Stat()
	if after.Size() != w.BytesWritten() || after.Size() != st.Size() {
		t.Errorf("file of %d bytes after Close, %d before, %d written", after.Size(), st.Size(), w.BytesWritten())
	}
	if b := blocks(); b >= after.Size()+preallocMin {
		t.Errorf("%d bytes allocated to a file of %d after Close", b, after.Size())
	}
}
