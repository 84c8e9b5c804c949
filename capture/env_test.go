package capture

import (
	"fmt"
	"io"
	"os"
	"testing"

	"nsprof/internal/testutils"
	"nsprof/internal/unix"
)

func TestNewWriterFromEnv(t *testing.T) {
	t.Setenv(TraceFDEnv, "")
	if _, err := NewWriterFromEnv(WriterOptions{}); err != ErrNoTraceFD {
		t.Fatalf("unset: err = %v", err)
	}
	fd, err := unix.MemfdCreate("[sysprof-tracefd:SYSPROF_TRACE_FD]", unix.MFD_CLOEXEC)
	if err != nil {
		testutils.RequireCI(t, "memfd_create: %v", err)
	}
	memfd := os.NewFile(uintptr(fd), "memfd")
	defer memfd.Close()
	memfd.WriteString("stale bytes that must be truncated away, longer than nothing")
	t.Setenv(TraceFDEnv, fmt.Sprint(fd))
	w, err := NewWriterFromEnv(WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	now := Now()
	w.AddMark(now, int32(os.Getpid()), 5, "app", "phase", "done")
	w.AddLog(now, int32(os.Getpid()), LogMessage, "app", "hello")
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	memfd.Seek(0, io.SeekStart)
	r, err := NewReader(memfd)
	if err != nil {
		t.Fatal(err)
	}
	if h := r.Header(); h.EndTime < now+5 || h.StartTime > now {
		t.Errorf("header range %d..%d does not cover mark at %d", h.StartTime, h.EndTime, now)
	}
	var types []FrameType
	for {
		f, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		types = append(types, f.Type())
	}
	if fmt.Sprint(types) != "[MARK LOG]" {
		t.Fatalf("frames %v", types)
	}
	t.Setenv(TraceFDEnv, "2")
	if _, err := NewWriterFromEnv(WriterOptions{}); err == nil {
		t.Error("fd 2 accepted")
	}
}
