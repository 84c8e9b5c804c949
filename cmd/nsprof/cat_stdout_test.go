package main

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"nsprof/capture"
	"nsprof/internal/unix"
)

// writeOtherCapture writes a capture with one process (pid 30) and two of
// its samples, none of which writeTestCapture has, and returns its path.
func writeOtherCapture(t testing.TB, dir, name string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	w, err := capture.CreateWithOptions(path, capture.WriterOptions{
		StartTime:   testStart + 20e6,
		CaptureTime: time.Date(2026, 1, 2, 3, 4, 6, 0, time.UTC),
	})
	if err != nil {
		t.Fatal(err)
	}
	h := func(ms int64) capture.FrameHeader {
		return capture.FrameHeader{CPU: 0, PID: 30, Time: testStart + 20e6 + ms*1e6}
	}
	for _, f := range []capture.Frame{
		&capture.Process{FrameHeader: h(0), Cmdline: "/bin/thirty"},
		&capture.Sample{FrameHeader: h(1), TID: 31, Addrs: []uint64{capture.ContextUser, 0x402000}},
		&capture.Sample{FrameHeader: h(2), TID: 31, Addrs: []uint64{capture.ContextUser, 0x402010}},
	} {
		if err := w.WriteFrame(f); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestCatRedirectedStdout checks `nsprof cat A B > OUT`, as sysprof-cat
// users type it: without -o, cat writes the merged capture to standard
// output when that is a file, and it reads back with the frames of both
// inputs.
func TestCatRedirectedStdout(t *testing.T) {
	dir := t.TempDir()
	a := writeTestCapture(t, dir, "a.syscap")
	b := writeOtherCapture(t, dir, "b.syscap")
	outPath := filepath.Join(dir, "out.syscap")
	out, err := os.Create(outPath) // what the shell's "> out.syscap" does
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	err = runIO(t.Context(), []string{"cat", a, b}, nil, out, &stderr)
	if cerr := out.Close(); cerr != nil {
		t.Fatal(cerr)
	}
	if err != nil {
		t.Fatalf("nsprof cat A B > %s: %v (stderr %q)", outPath, err, stderr.String())
	}

	r, err := capture.Open(outPath)
	if err != nil {
		t.Fatalf("the redirected output is not a capture: %v", err)
	}
	defer r.Close()
	samples := map[int32]int{}
	cmdlines := map[int32]string{}
	frames := 0
	for {
		f, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("reading the redirected output: %v", err)
		}
		frames++
		switch f := f.(type) {
		case *capture.Sample:
			samples[f.PID]++
		case *capture.Process:
			cmdlines[f.PID] = f.Cmdline
		}
	}
	// a has 11 frames, a sample of pid 10; b has 3, two samples of pid 30.
	if frames != 14 || samples[10] != 1 || samples[30] != 2 || cmdlines[10] != "/bin/ten --flag" || cmdlines[30] != "/bin/thirty" {
		t.Errorf("merged capture: %d frames, samples by pid %v, processes %v; want 14 frames with a's and b's", frames, samples, cmdlines)
	}

	// -o FILE keeps refusing an existing file without -f.
	if _, stderr, status := nsprof(t, nil, "cat", a, b, "-o", outPath); status != 1 || !strings.Contains(stderr, "file exists (use -f to overwrite)") {
		t.Errorf("cat -o onto an existing file: status %d, stderr %q", status, stderr)
	}
}

// TestCatRefusesPTY checks that cat without -o refuses to write a capture
// to a real terminal, and writes nothing to it.
func TestCatRefusesPTY(t *testing.T) {
	a := writeTestCapture(t, t.TempDir(), "a.syscap")
	ptm, tty, err := unix.OpenPTY()
	if err != nil {
		t.Fatalf("no pseudo-terminal to test with: %v", err)
	}
	defer ptm.Close()
	for _, args := range [][]string{{"cat", a}, {"cat", a, "-o", "-"}} {
		var stderr strings.Builder
		err := runIO(t.Context(), args, nil, tty, &stderr)
		status := exitStatus(err, &stderr)
		if status != 1 || !strings.Contains(stderr.String(), "nsprof: refusing to write a capture to a terminal: redirect standard output") {
			t.Errorf("%v on a terminal: status %d, stderr %q", args, status, stderr.String())
		}
	}
	tty.Close()
	// What was written to tty is read from ptm, which then fails with EIO.
	if got, _ := io.ReadAll(ptm); len(got) > 0 {
		t.Errorf("cat wrote %q to the terminal", got)
	}
}
