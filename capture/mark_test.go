package capture

import (
	"bytes"
	"errors"
	"math"
	"strings"
	"testing"
	"time"
)

// TestMarkCache writes marks whose group, name and message repeat, change,
// need truncation or hold a NUL, in an order that exercises what
// writeMark keeps from the mark before, and reads each back as written.
func TestMarkCache(t *testing.T) {
	long := strings.Repeat("x", 50)
	marks := []struct{ group, name, msg, wantGroup, wantName, wantMsg string }{
		{"g", "n", "m", "g", "n", "m"},
		{"g", "n", "m", "g", "n", "m"},
		{"g2", "n", "m", "g2", "n", "m"},
		{"g2", "name", "m\x00cut", "g2", "name", "m"},
		{"g2", "name", "m\x00cut", "g2", "name", "m"},
		{"g2", "name", "m", "g2", "name", "m"},
		{"g3", "name", "m", "g3", "name", "m"},
		{"g3", "nam3", "m", "g3", "nam3", "m"},
		{"g3", "nam3", "abcde", "g3", "nam3", "abcde"},
		{"g3", "nam3", "ab\x00de", "g3", "nam3", "ab"},
		{long, "name", "", long[:markGroupLen-1], "name", ""},
		{"g2", long, "longer message", "g2", long[:markNameLen-1], "longer message"},
		{"g2", "name", "longer message", "g2", "name", "longer message"},
		{"", "", "", "", "", ""},
		{"g", "n", "m", "g", "n", "m"},
	}
	var frames []Frame
	for i, m := range marks {
		frames = append(frames, &Mark{FrameHeader: FrameHeader{CPU: -1, PID: 1, Time: int64(10 + i)}, Duration: int64(i), Group: m.group, Name: m.name, Message: m.msg})
	}
	for _, opts := range []WriterOptions{{}, {BufferSize: defaultBufferSize}} {
		_, out, err := readAll(t, writeAll(t, opts, frames))
		if err != nil {
			t.Fatal(err)
		}
		if len(out) != len(marks) {
			t.Fatalf("%d frames read, want %d", len(out), len(marks))
		}
		for i, m := range marks {
			got := out[i].(*Mark)
			if got.Group != m.wantGroup || got.Name != m.wantName || got.Message != m.wantMsg || got.Duration != int64(i) || got.Time != int64(10+i) {
				t.Errorf("mark %d: read %q %q %q (duration %d), want %q %q %q", i, got.Group, got.Name, got.Message, got.Duration, m.wantGroup, m.wantName, m.wantMsg)
			}
		}
	}
}

// FuzzMarkEncoding writes the same marks through writeMark's fast path and
// through its general path and wants the same bytes, then reads them back:
// the fast path keeps the last group, name and message and stores short
// messages as words (putPadded), and must agree with the plain encoding.
func FuzzMarkEncoding(f *testing.F) {
	f.Add("nsprof", "bench-mark", "short message", "")
	f.Add("g", "n", "m\x00cut", "exactly sixteen!")
	f.Add(strings.Repeat("é", 20), "", "12345678", "1234567")
	f.Add("", strings.Repeat("n", 45), "abc", "a message longer than sixteen bytes")
	f.Fuzz(func(t *testing.T, group, name, msg1, msg2 string) {
		msgs := []string{msg1, msg2, msg1, msg1, msg2}
		encode := func(fast bool) []byte {
			var buf bytes.Buffer
			w, err := NewWriterWithOptions(&buf, WriterOptions{StartTime: 1, CaptureTime: time.Unix(0, 0), Clock: func() int64 { return math.MinInt64 }})
			if err != nil {
				t.Fatal(err)
			}
			for i, m := range msgs {
				w.fast = w.fast && fast
				if err := w.AddMark(int64(10+i), 1, int64(i), group, name, m); err != nil {
					if errors.Is(err, ErrFrameTooLarge) {
						t.Skip()
					}
					t.Fatal(err)
				}
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			return buf.Bytes()
		}
		fast, general := encode(true), encode(false)
		if !bytes.Equal(fast, general) {
			t.Fatalf("fast path wrote\n%x\ngeneral path\n%x", fast, general)
		}
		_, frames, err := readAll(t, fast)
		if err != nil {
			t.Fatal(err)
		}
		if len(frames) != len(msgs) {
			t.Fatalf("read %d frames, want %d", len(frames), len(msgs))
		}
		wantGroup := cutNUL(truncateUTF8(group, markGroupLen-1))
		wantName := cutNUL(truncateUTF8(name, markNameLen-1))
		for i, fr := range frames {
			m := fr.(*Mark)
			if m.Group != wantGroup || m.Name != wantName || m.Message != cutNUL(msgs[i]) {
				t.Errorf("mark %d: read %q %q %q, want %q %q %q", i, m.Group, m.Name, m.Message, wantGroup, wantName, cutNUL(msgs[i]))
			}
		}
	})
}
