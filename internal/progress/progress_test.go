package progress

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// clock returns a Line over a buffer whose time is moved by hand.
func clock(width int, delay time.Duration) (*Line, *bytes.Buffer, *time.Time) {
	var b bytes.Buffer
	l := New(&b, width, delay)
	t := l.start
	l.now = func() time.Time { return t }
	return l, &b, &t
}

func TestLineDelayRateClear(t *testing.T) {
	l, b, now := clock(0, time.Second)
	l.Report("reading x", 10, 100)
	if b.Len() != 0 {
		t.Fatalf("shown before the delay: %q", b.String())
	}
	*now = now.Add(time.Second)
	l.Report("reading x", 50, 100)
	if got, want := b.String(), "\rnsprof: reading x  50% (1.0s)\x1b[K"; got != want {
		t.Fatalf("line = %q, want %q", got, want)
	}
	b.Reset()
	*now = now.Add(10 * time.Millisecond)
	l.Report("reading x", 60, 100)
	if b.Len() != 0 {
		t.Fatalf("redrawn within the interval: %q", b.String())
	}
	l.Report("naming frames", 0, 0)
	if got, want := b.String(), "\rnsprof: naming frames (1.0s)\x1b[K"; got != want {
		t.Fatalf("a new stage: line = %q, want %q", got, want)
	}
	b.Reset()
	l.Clear()
	if got := b.String(); got != "\r\x1b[K" {
		t.Fatalf("Clear wrote %q", got)
	}
	b.Reset()
	l.Clear()
	if b.Len() != 0 {
		t.Fatalf("Clear of a cleared line wrote %q", b.String())
	}
}

func TestLineWidthAndNil(t *testing.T) {
	l, b, now := clock(20, 0)
	*now = now.Add(time.Millisecond)
	l.Report(strings.Repeat("x", 40), 1, 2)
	if got := strings.TrimSuffix(strings.TrimPrefix(b.String(), "\r"), "\x1b[K"); len(got) != 19 {
		t.Fatalf("line %q is %d columns, want 19 on a 20-column terminal", got, len(got))
	}
	var nl *Line
	nl.Report("x", 1, 2) // a nil Line shows nothing and does not panic
	nl.Clear()
}
