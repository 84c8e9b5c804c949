package capture

import (
	"bytes"
	"encoding/binary"
	"errors"
	"reflect"
	"strings"
	"testing"
)

// frameOffsets returns the offset of every frame in a capture we wrote.
func frameOffsets(b []byte) []int {
	var offs []int
	for off := HeaderSize; off+FrameHeaderSize <= len(b); {
		offs = append(offs, off)
		off += int(binary.LittleEndian.Uint16(b[off:]))
	}
	return offs
}

// TestTruncatedAtEveryByte cuts a capture at every length and checks that
// the reader returns exactly the frames wholly before the cut, then either a
// clean end (cut on a frame boundary) or an error naming the offset of the
// cut frame.
func TestTruncatedAtEveryByte(t *testing.T) {
	in := allFrames()
	full := writeAll(t, WriterOptions{ByteOrder: binary.LittleEndian, NewFrameTypes: true}, in)
	offs := append(frameOffsets(full), len(full))
	for cut := 0; cut <= len(full); cut++ {
		_, out, err := readAll(t, full[:cut])
		if cut < HeaderSize {
			var fe *FormatError
			if !errors.As(err, &fe) {
				t.Fatalf("cut %d: header error = %v", cut, err)
			}
			continue
		}
		whole := 0
		for whole+1 < len(offs) && offs[whole+1] <= cut {
			whole++
		}
		if len(out) != whole {
			t.Fatalf("cut %d: read %d frames, want %d", cut, len(out), whole)
		}
		if !equalFrames(out, in[:whole]) {
			t.Fatalf("cut %d: frames differ", cut)
		}
		atBoundary := cut == offs[whole]
		if atBoundary {
			if err != nil {
				t.Fatalf("cut %d on a frame boundary: %v", cut, err)
			}
			continue
		}
		var fe *FormatError
		if !errors.As(err, &fe) || fe.Off != int64(offs[whole]) {
			t.Fatalf("cut %d: err = %v, want FormatError at %d", cut, err, offs[whole])
		}
	}
}

func TestDamage(t *testing.T) {
	frames := []Frame{
		&Process{FrameHeader: FrameHeader{PID: 1, Time: 10}, Cmdline: "one"},
		&Sample{FrameHeader: FrameHeader{PID: 1, Time: 20}, TID: 1, Addrs: []uint64{1, 2, 3}},
		&Exit{FrameHeader: FrameHeader{PID: 1, Time: 30}},
	}
	good := writeAll(t, WriterOptions{ByteOrder: binary.LittleEndian}, frames)
	second := frameOffsets(good)[1]
	for _, tc := range []struct {
		name    string
		mutate  func(b []byte)
		wantOff int64
		frames  int
	}{
		{"bad magic", func(b []byte) { b[0] = 'X' }, 0, 0},
		{"length zero", func(b []byte) { binary.LittleEndian.PutUint16(b[second:], 0) }, int64(second), 1},
		{"length not aligned", func(b []byte) { binary.LittleEndian.PutUint16(b[second:], 57) }, int64(second), 1},
		{"length beyond end", func(b []byte) { binary.LittleEndian.PutUint16(b[second:], 65528) }, int64(second), 1},
		{"unknown type", func(b []byte) { b[second+16] = 99 }, int64(second), 1},
		{"type zero", func(b []byte) { b[second+16] = 0 }, int64(second), 1},
		{"address count too large", func(b []byte) { binary.LittleEndian.PutUint16(b[second+24:], 4) }, int64(second), 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := bytes.Clone(good)
			tc.mutate(b)
			_, out, err := readAll(t, b)
			var fe *FormatError
			if !errors.As(err, &fe) {
				t.Fatalf("err = %v, want *FormatError", err)
			}
			if fe.Off != tc.wantOff {
				t.Errorf("error offset %d, want %d (%v)", fe.Off, tc.wantOff, err)
			}
			if !equalFrames(out, frames[:tc.frames]) {
				t.Errorf("read %d frames before damage, want %d", len(out), tc.frames)
			}
		})
	}
}

func TestUnknownTypesAllowed(t *testing.T) {
	good := writeAll(t, WriterOptions{ByteOrder: binary.LittleEndian}, []Frame{
		&Exit{FrameHeader: FrameHeader{PID: 1}}, &Exit{FrameHeader: FrameHeader{PID: 2}},
	})
	good[HeaderSize+16] = 42
	r, err := NewReaderWithOptions(bytes.NewReader(good), ReaderOptions{AllowUnknown: true})
	if err != nil {
		t.Fatal(err)
	}
	f, err := r.Next()
	if u, ok := f.(*Unknown); err != nil || !ok || u.RawType != 42 || u.PID != 1 {
		t.Fatalf("got %#v, %v", f, err)
	}
	if f, err := r.Next(); err != nil || f.(*Exit).PID != 2 {
		t.Fatalf("frame after unknown: %#v, %v", f, err)
	}
}

func TestFrameIndexSkipped(t *testing.T) {
	b := writeAll(t, WriterOptions{ByteOrder: binary.LittleEndian}, []Frame{
		&Exit{FrameHeader: FrameHeader{PID: 1}},
	})
	idx := make([]byte, 32)
	binary.LittleEndian.PutUint16(idx, 32)
	idx[16] = byte(TypeTimestamp)
	binary.LittleEndian.PutUint32(idx[20:], frameIndexMagic)
	b = append(b[:HeaderSize], append(idx, b[HeaderSize:]...)...)
	_, out, err := readAll(t, b)
	if err != nil || len(out) != 1 || out[0].Type() != TypeExit {
		t.Fatalf("got %v frames, err %v", len(out), err)
	}
}

func TestStringsCutAtNUL(t *testing.T) {
	b := writeAll(t, WriterOptions{ByteOrder: binary.LittleEndian}, []Frame{
		&Mark{Group: "g", Name: "n", Message: "abc"},
	})
	// Sysprof's writer leaves stale bytes after a fixed string's NUL.
	copy(b[HeaderSize+32+2:], "zz")
	_, out, err := readAll(t, b)
	if err != nil {
		t.Fatal(err)
	}
	if m := out[0].(*Mark); m.Group != "g" {
		t.Fatalf("group = %q", m.Group)
	}
}

func TestFixedFieldTruncation(t *testing.T) {
	long := "αβγδεζηθικλμνξοπρστυφχψω" // 2-byte runes
	b := writeAll(t, WriterOptions{}, []Frame{&Mark{Group: long, Name: long}})
	_, out, err := readAll(t, b)
	if err != nil {
		t.Fatal(err)
	}
	m := out[0].(*Mark)
	if len(m.Group) > markGroupLen-1 || len(m.Name) > markNameLen-1 {
		t.Fatalf("not truncated: %q %q", m.Group, m.Name)
	}
	if m.Group != long[:22] || m.Name != long[:38] {
		t.Fatalf("cut inside a rune: %q %q", m.Group, m.Name)
	}
}

func TestPaddingZeroed(t *testing.T) {
	var buf bytes.Buffer
	w, _ := NewWriterWithOptions(&buf, WriterOptions{ByteOrder: binary.LittleEndian})
	// Fill the buffer with a long frame, then a short one over the same
	// bytes after a flush: padding must still be zero.
	w.WriteFrame(&Process{Cmdline: string(bytes.Repeat([]byte{'x'}, 200))})
	w.Flush()
	w.WriteFrame(&Process{Cmdline: "a"})
	w.Close()
	b := buf.Bytes()
	last := b[len(b)-32:]
	if !bytes.Equal(last[24:], []byte{'a', 0, 0, 0, 0, 0, 0, 0}) {
		t.Fatalf("padding not zero: % x", last[24:])
	}
}

func equalFrames(a, b []Frame) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !reflect.DeepEqual(a[i], b[i]) {
			return false
		}
	}
	return true
}

// TestPerfDataNamed: a perf.data file given for a capture is named as
// one, as users hand report what they would hand perf report.
func TestPerfDataNamed(t *testing.T) {
	for _, magic := range []string{"PERFILE2", "PERFFILE"} {
		b := append([]byte(magic), make([]byte, HeaderSize)...)
		_, err := NewReader(bytes.NewReader(b))
		var fe *FormatError
		if !errors.As(err, &fe) || fe.Off != 0 || !strings.Contains(err.Error(), "a perf.data file") {
			t.Errorf("%s: err = %v, want a FormatError at 0 naming perf.data", magic, err)
		}
	}
	b := append([]byte("XERFILE2"), make([]byte, HeaderSize)...)
	if _, err := NewReader(bytes.NewReader(b)); err == nil || strings.Contains(err.Error(), "perf.data") {
		t.Errorf("other magic: err = %v, want bad magic without perf.data", err)
	}
}
