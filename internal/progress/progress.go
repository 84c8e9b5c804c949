// Package progress shows how far a long command has come on one line of a
// terminal, redrawn in place and cleared before anything else is written.
// A nil [*Line] shows nothing, so callers need not check whether the
// output is a terminal at every step.
package progress

import (
	"fmt"
	"io"
	"sync"
	"time"
)

// DefaultDelay is how long a command runs before its progress is shown:
// a command done sooner prints no line at all.
const DefaultDelay = 500 * time.Millisecond

// interval bounds how often the line is redrawn.
const interval = 100 * time.Millisecond

// Line is one progress line on a terminal. It is safe for concurrent use.
type Line struct {
	mu    sync.Mutex
	w     io.Writer
	width int
	start time.Time
	delay time.Duration
	last  time.Time
	text  string
	shown bool
	now   func() time.Time
}

// New returns a line written to w, a terminal width columns wide (0 if
// unknown), shown only once delay has passed since New.
func New(w io.Writer, width int, delay time.Duration) *Line {
	return &Line{w: w, width: width, start: time.Now(), delay: delay, now: time.Now}
}

// Report shows that stage has done of total units (bytes, frames); a
// total of 0 shows the stage alone. Redraws are at most every 100 ms,
// except when the stage changes.
func (l *Line) Report(stage string, done, total int64) {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	if now.Sub(l.start) < l.delay {
		return
	}
	if stage == l.text && now.Sub(l.last) < interval {
		return
	}
	l.last = now
	l.text = stage
	line := "nsprof: " + stage
	if total > 0 {
		pct := 100 * float64(min(max(done, 0), total)) / float64(total)
		line += fmt.Sprintf(" %3.0f%%", pct)
	}
	line += fmt.Sprintf(" (%.1fs)", now.Sub(l.start).Seconds())
	if l.width > 1 && len(line) >= l.width {
		line = line[:l.width-1]
	}
	fmt.Fprintf(l.w, "\r%s\x1b[K", line)
	l.shown = true
}

// Clear erases the line if it is shown, so that what is written next
// starts on a clean line. The line shows again at the next Report.
func (l *Line) Clear() {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.shown {
		fmt.Fprint(l.w, "\r\x1b[K")
		l.shown = false
	}
	l.text = ""
}
