package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"nsprof/internal/unix"
)

// runStderr runs nsprof with stderr the file f, closed afterwards, and
// returns what reading r (the other end of f) gave.
func runStderr(t *testing.T, f *os.File, r io.Reader, args ...string) string {
	t.Helper()
	var got bytes.Buffer
	done := make(chan struct{})
	go func() {
		defer close(done)
		io.Copy(&got, r) // a pty master ends with EIO once the tty is closed
	}()
	var out bytes.Buffer
	err := runIO(context.Background(), args, nil, &out, f)
	f.Close()
	<-done
	if err != nil {
		t.Fatalf("%v: %v", args, err)
	}
	return got.String()
}

// TestReportExportProgress checks that report and export show their
// progress on a terminal, on one line cleared before they end, and write
// none when stderr is not a terminal.
func TestReportExportProgress(t *testing.T) {
	defer func(d time.Duration) { progressDelay = d }(progressDelay)
	progressDelay = 0 // the test capture loads in well under the delay
	path, _ := writeReportCapture(t, t.TempDir())
	for _, args := range [][]string{
		{"report", path},
		{"report", "--tree", path},
		{"export", "--format", "folded", path},
	} {
		t.Run(args[0]+"/pipe", func(t *testing.T) {
			r, w, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			if got := runStderr(t, w, r, args...); got != "" {
				t.Errorf("%v with stderr a pipe wrote %q", args, got)
			}
		})
		t.Run(args[0]+"/pty", func(t *testing.T) {
			ptm, tty, err := unix.OpenPTY()
			if err != nil {
				t.Fatalf("no pseudo-terminal to test with: %v", err)
			}
			defer ptm.Close()
			got := runStderr(t, tty, ptm, args...)
			for _, want := range []string{"\rnsprof: reading the capture", "\rnsprof: naming frames", "\rnsprof: " + progressView} {
				if !strings.Contains(got, want) {
					t.Errorf("%v on a terminal: no %q in %q", args, want, got)
				}
			}
			if !strings.HasSuffix(got, "\r\x1b[K") {
				t.Errorf("%v on a terminal: the line is not cleared at the end: %q", args, got)
			}
		})
	}
}
