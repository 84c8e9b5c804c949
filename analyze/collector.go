package analyze

import (
	"strconv"

	"nsprof/capture"
)

// CollectorStats are the totals nsprof record stores (METADATA
// nsprof.collector.*) for the SYSPROF_CONTROL_FD rings it served: the
// frames the applications' libsysprof-capture collectors wrote (marks,
// logs, counters, allocations) and what the rings could not take.
// libsysprof-capture drops a frame its ring has no room for without
// counting it, so the loss is known as the times a ring was found too
// full for its thread's next frame and the time the thread could not
// write; the frames lost meanwhile are an estimate.
type CollectorStats struct {
	// Frames is the number of frames copied from the rings.
	Frames uint64 `json:"frames"`
	// Full counts the times a ring was found too full for its thread's
	// next frame.
	Full uint64 `json:"rings_full"`
	// BlockedNs is the time, in all, the threads could not write.
	BlockedNs int64 `json:"blocked_ns"`
	// LostEstimate is how many frames the threads would have written
	// meanwhile at the rate each filled its ring.
	LostEstimate uint64 `json:"lost_estimate"`
}

// Collector returns the collector totals of t; ok is false when t has
// none (a capture nsprof did not record, or no ring was asked for) or
// they cannot be read.
func (t *Timeline) Collector() (s CollectorStats, ok bool) {
	frames, ok := t.Metadata[capture.MetaCollectorFrames]
	if !ok {
		return s, false
	}
	var err error
	if s.Frames, err = strconv.ParseUint(frames, 10, 64); err != nil {
		return s, false
	}
	if s.Full, err = strconv.ParseUint(t.Metadata[capture.MetaCollectorFull], 10, 64); err != nil {
		return s, false
	}
	if s.BlockedNs, err = strconv.ParseInt(t.Metadata[capture.MetaCollectorBlockedNs], 10, 64); err != nil {
		return s, false
	}
	if s.LostEstimate, err = strconv.ParseUint(t.Metadata[capture.MetaCollectorLostEstimate], 10, 64); err != nil {
		return s, false
	}
	return s, true
}
