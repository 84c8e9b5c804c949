package record

import (
	"fmt"
	"time"

	"nsprof/capture"
)

// counterSource is one group of counters polled while recording.
type counterSource interface {
	// name is how the source is called in messages and flags.
	name() string
	// counters returns the definitions; IDs are filled in by the caller.
	counters() []capture.Counter
	// poll returns the current values, index-aligned with counters(). A nil
	// slice means nothing new this time.
	poll(now time.Time) ([]capture.CounterValue, error)
	// interval is how often poll is called.
	interval() time.Duration
}

// counterSet drives the enabled counter sources into a Writer.
type counterSet struct {
	sources []counterSource
	ids     [][]uint32
	next    []time.Time
}

// define requests ids and writes the definitions of every source.
func (cs *counterSet) define(w *capture.Writer, t int64) error {
	for _, s := range cs.sources {
		defs := s.counters()
		first, err := w.RequestCounters(len(defs))
		if err != nil {
			return err
		}
		ids := make([]uint32, len(defs))
		for i := range defs {
			ids[i] = first + uint32(i)
			defs[i].ID = ids[i]
		}
		if err := w.DefineCounters(capture.FrameHeader{CPU: -1, PID: -1, Time: t}, defs); err != nil {
			return fmt.Errorf("define %s counters: %w", s.name(), err)
		}
		cs.ids = append(cs.ids, ids)
		cs.next = append(cs.next, time.Time{})
	}
	return nil
}

// tick polls the sources that are due at now and writes their values,
// stamped t. Errors from a source are returned after the others have
// been written.
func (cs *counterSet) tick(w *capture.Writer, now time.Time, t int64) error {
	var firstErr error
	for i, s := range cs.sources {
		if now.Before(cs.next[i]) {
			continue
		}
		cs.next[i] = now.Add(s.interval())
		vals, err := s.poll(now)
		if err != nil {
			if firstErr == nil {
				firstErr = fmt.Errorf("%s counters: %w", s.name(), err)
			}
			continue
		}
		if vals == nil {
			continue
		}
		ups := make([]capture.CounterUpdate, len(vals))
		for j, v := range vals {
			ups[j] = capture.CounterUpdate{ID: cs.ids[i][j], Value: v}
		}
		if err := w.SetCounters(capture.FrameHeader{CPU: -1, PID: -1, Time: t}, ups); err != nil {
			return err
		}
	}
	return firstErr
}
