package capture

import (
	"strings"
	"testing"
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
