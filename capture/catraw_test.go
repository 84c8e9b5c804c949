package capture

import (
	"bytes"
	"fmt"
	"io"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// traceFDCapture builds a capture as an application writes it through
// SYSPROF_TRACE_FD: every frame type Cat copies as stored, with its own
// (namespace) pids 1 and 2, and ids Cat must leave alone (-1, 0).
func traceFDCapture(t testing.TB) []byte {
	var buf bytes.Buffer
	w, err := NewWriterWithOptions(&buf, WriterOptions{StartTime: 900, Clock: func() int64 { return 950 }})
	if err != nil {
		t.Fatal(err)
	}
	h := func(pid int32, time int64) FrameHeader { return FrameHeader{CPU: 1, PID: pid, Time: time} }
	frames := []Frame{
		&Process{FrameHeader: h(1, 901), Cmdline: "app --flag"},
		&Fork{FrameHeader: h(1, 902), ChildPID: 2},
		&Mark{FrameHeader: h(1, 903), Duration: 2000, Group: "g", Name: "n", Message: "first"},
		&Mark{FrameHeader: h(2, 904), Duration: 0, Group: strings.Repeat("G", 40), Name: strings.Repeat("N", 60), Message: strings.Repeat("m", 300)},
		&Map{FrameHeader: h(2, 905), Start: 0x400000, End: 0x401000, Filename: "/usr/bin/app"},
		&Log{FrameHeader: h(2, 905), Severity: LogWarning, Domain: "dom", Message: "log line"},
		&Metadata{FrameHeader: h(-1, 906), ID: "key", Value: "value"},
		&Sample{FrameHeader: h(1, 907), TID: 2, Addrs: []uint64{ContextUser, 0x401000, 0x402000}},
		&Sample{FrameHeader: h(0, 908), TID: 0},
		&Allocation{FrameHeader: h(2, 909), TID: 2, Addr: 0x1000, Size: 64, Addrs: []uint64{0x401000}},
		&Timestamp{FrameHeader: h(-1, 910)},
		&Exit{FrameHeader: h(2, 911)},
	}
	for _, f := range frames {
		if err := w.WriteFrame(f); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestCatCopiesAsDecoded: what Cat copies as stored must read back as
// what decoding the frames and mapping their ids gives, through either
// reader (Cat's buffered one and CatBytes's in-place one, which copies
// frames without ids to map in runs), in order around a frame it decodes
// (the MAP), with the
// destination's frame counts and time range as the typed path keeps them.
func TestCatCopiesAsDecoded(t *testing.T) {
	src := traceFDCapture(t)
	mapPID := func(id int32) int32 { return id + 5000 }
	mapped := want0(t, src)
	for _, f := range mapped {
		MapIDs(f, mapPID)
	}
	for _, how := range []string{"Cat", "CatBytes", "CatBytes unmapped"} {
		t.Run(how, func(t *testing.T) {
			want, mapPID := mapped, mapPID
			if how == "CatBytes unmapped" {
				want, mapPID = want0(t, src), nil
			}
			var out memFile
			w, err := NewWriterWithOptions(&out, WriterOptions{StartTime: 1000, Clock: func() int64 { return 1000 }})
			if err != nil {
				t.Fatal(err)
			}
			opts := CatOptions{MapPID: mapPID}
			if how == "Cat" {
				err = Cat(w, bytes.NewReader(src), opts)
			} else {
				err = CatBytes(w, src, opts)
			}
			if err != nil {
				t.Fatal(err)
			}
			if n := w.Count(TypeMark); n != 2 {
				t.Errorf("Count(MARK) = %d, want 2", n)
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			hdr, got, err := readAll(t, out.b)
			if err != nil {
				t.Fatal(err)
			}
			// The first mark ends last: 903 + 2000.
			if hdr.StartTime != 900 || hdr.EndTime != 2903 {
				t.Errorf("time range %d..%d, want 900..2903", hdr.StartTime, hdr.EndTime)
			}
			if !reflect.DeepEqual(got, want) {
				for i := range max(len(got), len(want)) {
					var g, w Frame
					if i < len(got) {
						g = got[i]
					}
					if i < len(want) {
						w = want[i]
					}
					if !reflect.DeepEqual(g, w) {
						t.Errorf("frame %d:\n got %+v\nwant %+v", i, g, w)
					}
				}
			}
		})
	}
}

// want0 returns the frames of the capture src.
func want0(t *testing.T, src []byte) []Frame {
	t.Helper()
	_, fs, err := readAll(t, src)
	if err != nil {
		t.Fatal(err)
	}
	return fs
}

// TestCatMarksWithoutAllocating: merging the marks an application wrote
// through its trace fd costs no allocation per mark (decoding each into a
// Mark and its strings cost 0.5 µs of recorder CPU a mark), and every mark
// arrives, in order, with its pid mapped. Unmapped, CatBytes writes them
// from the source in runs around the MAP frames it decodes (here one
// longer than maxRun, one of a single mark, and the rest), in order too.
func TestCatMarksWithoutAllocating(t *testing.T) {
	const n = 20000
	var buf bytes.Buffer
	w, err := NewWriterWithOptions(&buf, WriterOptions{StartTime: 1, Clock: func() int64 { return 1 }})
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if err := w.AddMark(int64(10+i), 1, int64(i), "bench", "mark", "i="+strconv.Itoa(i)); err != nil {
			t.Fatal(err)
		}
		if i == 14999 || i == 15000 {
			w.WriteFrame(&Map{FrameHeader: FrameHeader{PID: 1, Time: int64(10 + i)}, Start: 0x400000, End: 0x401000, Filename: "/usr/bin/app"})
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	src := buf.Bytes()
	mapPID := func(id int32) int32 { return id + 5000 }
	var out memFile
	merge := func(bytesIn bool, opts CatOptions) {
		out = memFile{}
		dst, err := NewWriter(&out)
		if err != nil {
			t.Fatal(err)
		}
		if bytesIn {
			err = CatBytes(dst, src, opts)
		} else {
			err = Cat(dst, bytes.NewReader(src), opts)
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := dst.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if perMark := testing.AllocsPerRun(3, func() { merge(false, CatOptions{MapPID: mapPID}) }) / n; perMark > 0.01 {
		t.Errorf("%.2f allocations per mark merged, want none", perMark)
	}
	checkMarks(t, out.b, n, 5001)
	merge(true, CatOptions{})
	checkMarks(t, out.b, n, 1)
	if _, got, err := readAll(t, out.b); err != nil || !reflect.DeepEqual(got, want0(t, src)) {
		t.Errorf("CatBytes unmapped: %d frames (%v), not the %d of the source", len(got), err, len(want0(t, src)))
	}
}

// checkMarks checks that capture b holds the n marks of
// TestCatMarksWithoutAllocating in order, with pid.
func checkMarks(t *testing.T, b []byte, n int, pid int32) {
	t.Helper()
	r, err := NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	i := 0
	for {
		f, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		m, ok := f.(*Mark)
		if !ok {
			continue
		}
		if want := fmt.Sprintf("i=%d", i); m.Message != want || m.Duration != int64(i) || m.Time != int64(10+i) || m.PID != pid {
			t.Fatalf("mark %d: %q duration %d time %d pid %d, want %q %d %d %d", i, m.Message, m.Duration, m.Time, m.PID, want, i, 10+i, pid)
		}
		i++
	}
	if i != n {
		t.Errorf("%d marks merged, want %d", i, n)
	}
}

// BenchmarkCatBytesMarks merges a million marks as a recorder merges a
// trace fd: in place, with pids mapped, into a Writer on io.Discard.
func BenchmarkCatBytesMarks(b *testing.B) {
	var buf bytes.Buffer
	w, err := NewWriterWithOptions(&buf, WriterOptions{StartTime: 1, Clock: func() int64 { return 1 }})
	if err != nil {
		b.Fatal(err)
	}
	for i := range 1_000_000 {
		if err := w.AddMark(int64(10+i), 1, int64(i), "bench", "mark", "i="+strconv.Itoa(i)); err != nil {
			b.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
	src := buf.Bytes()
	b.SetBytes(int64(len(src)))
	for b.Loop() {
		dst, err := NewWriter(io.Discard)
		if err != nil {
			b.Fatal(err)
		}
		if err := CatBytes(dst, src, CatOptions{MapPID: func(id int32) int32 { return id + 5000 }}); err != nil {
			b.Fatal(err)
		}
		dst.Close()
	}
}
