package analyze

import (
	"fmt"
	"time"

	"nsprof/capture"
)

// OutOfRange counts the frames stamped before the capture's start, which a
// capture's writer sets before it writes any frame: a stray timestamp (a
// collector's time 0, or a time on another clock) rather than a moment of
// the recording. Such frames are kept, but they do not move the capture's
// start, so one of them cannot turn an 8 s capture into a 800 s one.
type OutOfRange struct {
	// Frames is how many; Earliest the earliest time among them.
	Frames   int
	Earliest int64
}

// add counts a frame at t when t is before start (a header start of 0
// means the header has none: every frame counts toward the bounds then).
func (o *OutOfRange) add(t, start int64) {
	if start <= 0 || t >= start {
		return
	}
	if o.Frames == 0 || t < o.Earliest {
		o.Earliest = t
	}
	o.Frames++
}

// warning says what o counted, "" when nothing; what names the frames.
func (o *OutOfRange) warning(what string, start int64) string {
	if o.Frames == 0 {
		return ""
	}
	return fmt.Sprintf("%d %s stamped before the capture's start (the earliest %v before it) left out of its time range",
		o.Frames, what, time.Duration(start-o.Earliest).Round(time.Millisecond))
}

// captureBounds returns the capture's start and end. The start is the
// header's, when it has one, else the earliest frame time; frames before
// it are out of range ([OutOfRange]). The end is the header's, widened to
// the latest frame (minTime..maxTime, empty when maxTime < minTime):
// a capture cut short holds frames written after its header was last
// patched.
func captureBounds(h capture.FileHeader, minTime, maxTime int64) (start, end int64) {
	start, end = h.StartTime, h.EndTime
	if maxTime >= minTime {
		if start <= 0 {
			start = minTime
		}
		end = max(end, maxTime)
	}
	return start, max(end, start)
}

// countOutOfRange counts the samples stamped before p's start, with a
// warning.
func (p *Profile) countOutOfRange() {
	for i := range p.Samples {
		p.OutOfRange.add(p.Samples[i].Time, p.Header.StartTime)
	}
	if w := p.OutOfRange.warning("samples", p.Header.StartTime); w != "" {
		p.Warnings = append(p.Warnings, w)
	}
}
