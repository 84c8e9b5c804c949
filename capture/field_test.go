package capture

import (
	"bytes"
	"encoding/binary"
	"reflect"
	"strings"
	"testing"
)

// TestFieldLastByte: a fixed-size string field, or a frame's trailing
// string, whose last byte is not NUL reads as libsysprof-capture's reader
// sees it (that byte overwritten with NUL), so what is read is what the
// Writer writes back.
func TestFieldLastByte(t *testing.T) {
	group, name := strings.Repeat("g", markGroupLen-1), strings.Repeat("n", markNameLen-1)
	b := writeAll(t, WriterOptions{ByteOrder: binary.LittleEndian, StartTime: 1}, []Frame{
		&Mark{FrameHeader: FrameHeader{CPU: 1, PID: 2, Time: 3}, Duration: 4, Group: group, Name: name, Message: "m"},
	})
	f := b[HeaderSize:]
	if got := binary.LittleEndian.Uint16(f); got != markFixed+8 {
		t.Fatalf("MARK frame of %d bytes, want %d", got, markFixed+8)
	}
	// Fill every terminator and the padding: group, name, and the
	// message's NUL and padding up to the frame's last byte.
	f[32+markGroupLen-1] = 'G'
	f[56+markNameLen-1] = 'N'
	for i := markFixed + 1; i < markFixed+8; i++ {
		f[i] = 'x'
	}
	_, frames, err := readAll(t, b)
	if err != nil || len(frames) != 1 {
		t.Fatalf("read: %d frames, %v", len(frames), err)
	}
	m := frames[0].(*Mark)
	if m.Group != group || m.Name != name || m.Message != "mxxxxxx" {
		t.Errorf("read group %q name %q message %q, want %q %q %q", m.Group, m.Name, m.Message, group, name, "mxxxxxx")
	}
	_, again, err := readAll(t, writeAll(t, WriterOptions{ByteOrder: binary.LittleEndian, StartTime: 1}, frames))
	if err != nil || len(again) != 1 || !reflect.DeepEqual(again[0], frames[0]) {
		t.Errorf("rewritten: %+v, %v; want %+v", again, err, frames[0])
	}
}

// TestBuildIDLowercase: a MAP frame's build-id reads lowercase, as
// Map.BuildID is documented, whatever case the file spells it in.
func TestBuildIDLowercase(t *testing.T) {
	b := writeAll(t, WriterOptions{ByteOrder: binary.LittleEndian, StartTime: 1}, []Frame{
		&Map{FrameHeader: FrameHeader{PID: 2, Time: 3}, Start: 0x1000, End: 0x2000, Filename: "/lib/x.so", BuildID: "abcdef0123"},
	})
	i := bytes.Index(b, []byte("@abcdef0123"))
	if i < 0 {
		t.Fatal("build-id not found in the capture")
	}
	copy(b[i+1:], "ABCDEF0123")
	_, frames, err := readAll(t, b)
	if err != nil || len(frames) != 1 {
		t.Fatalf("read: %d frames, %v", len(frames), err)
	}
	if got := frames[0].(*Map).BuildID; got != "abcdef0123" {
		t.Errorf("build-id %q, want abcdef0123", got)
	}
}
