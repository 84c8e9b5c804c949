package record

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// A line written while the status line shows starts on a cleared line,
// and the summary counts the processes with samples apart from those
// seen.
func TestStatusLineClearedBeforeLines(t *testing.T) {
	var term bytes.Buffer
	s := &statusLine{w: &term, width: 80}
	s.update(Stats{Elapsed: time.Second, Samples: 3, Processes: 2})
	s.println(&term, "nsprof: warning")
	s.println(&term, "nsprof: another")
	s.text(strings.Repeat("x", 200))
	s.clear()
	want := "\rrecording   1.0s  samples 3  lost 0  processes 2  0.0 MB\x1b[K\r\x1b[Knsprof: warning\nnsprof: another\n\r" + strings.Repeat("x", 79) + "\x1b[K\r\x1b[K"
	if term.String() != want {
		t.Errorf("terminal got\n%q\nwant\n%q", term.String(), want)
	}
	var nilStatus *statusLine
	var log bytes.Buffer
	nilStatus.println(&log, "nsprof: no terminal")
	nilStatus.clear()
	if log.String() != "nsprof: no terminal\n" {
		t.Errorf("without a status line: %q", log.String())
	}
	sum := Stats{Elapsed: time.Second, Samples: 10, Processes: 5, SampledProcesses: 1, Bytes: 1e6}.Summary("c.syscap")
	if want := "recorded 1.0s: 10 samples of 1 process, 5 processes seen, 1.0 MB written to c.syscap"; sum != want {
		t.Errorf("summary %q, want %q", sum, want)
	}
}
