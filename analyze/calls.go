package analyze

import (
	"fmt"
	"strconv"

	"nsprof/capture"
)

// The sample types of a capture with instrumented calls (nsprof record
// --calls): they come last. Each call arc the preload counted is a
// sample whose stack is two frames, the called function and the call
// site in its caller, valued only in these columns.
var (
	// CallsType counts the calls of the arc.
	CallsType = ValueType{"calls", "count"}
	// CallTimeType is their total time, callees included; only for code
	// built with -finstrument-functions (-pg code is counted, not timed).
	CallTimeType = ValueType{"call_time", "nanoseconds"}
	// CallSelfTimeType is the part of CallTimeType not spent in
	// instrumented callees.
	CallSelfTimeType = ValueType{"call_self_time", "nanoseconds"}
)

// IsCallsType reports whether name names a sample type of instrumented
// calls.
func IsCallsType(name string) bool {
	return name == CallsType.Type || name == CallTimeType.Type || name == CallSelfTimeType.Type
}

// callStats are what the recording says of its instrumented calls.
type callStats struct {
	recorded            bool
	arcs, lost, untimed int64
	// timed says some arc has its time measured.
	timed bool
	// probes are the ranges of the functions of record --probe;
	// lostRecords the perf records the rings lost under it.
	probes      []capture.ProbeRange
	lostRecords int64
}

// callsMeta takes the METADATA frames of a --calls recording.
func (b *builder) callsMeta(id, value string) {
	s := &b.callStats
	switch id {
	case capture.MetaCalls:
		s.recorded = true
	case capture.MetaCallsArcs:
		s.arcs, _ = strconv.ParseInt(value, 10, 64)
	case capture.MetaCallsLost:
		s.lost, _ = strconv.ParseInt(value, 10, 64)
	case capture.MetaCallsUntimed:
		s.untimed, _ = strconv.ParseInt(value, 10, 64)
	case capture.MetaProbeLostRecords:
		s.lostRecords, _ = strconv.ParseInt(value, 10, 64)
	case capture.MetaProbeRange:
		r, err := capture.ParseProbeRange(value)
		if err != nil {
			b.p.Warnings = append(b.p.Warnings, fmt.Sprintf("probes: %v", err))
			return
		}
		s.probes = append(s.probes, r)
	}
}

// callSamples adds a sample per record of [capture.CallsFile], and
// returns the values of each, by index in the samples: calls, total and
// self time. It runs before the samples are gathered.
func (b *builder) callSamples() map[int32][3]int64 {
	if !b.files.has(capture.CallsFile) {
		if b.callStats.arcs > 0 {
			b.p.Warnings = append(b.p.Warnings, fmt.Sprintf("calls: the recording wrote %d arc records but the capture has no %s", b.callStats.arcs, capture.CallsFile))
		}
		return nil
	}
	data, err := b.files.lookup(capture.CallsFile)
	var recs []capture.Call
	if err == nil {
		recs, err = capture.DecodeCalls(data)
	}
	if err != nil {
		b.p.Warnings = append(b.p.Warnings, fmt.Sprintf("calls: %v (using the %d arc records before)", err, len(recs)))
	}
	out := make(map[int32][3]int64, len(recs))
	var addrs [2]uint64
	for _, r := range recs {
		addrs[0], addrs[1] = r.Callee, r.Site
		b.time(r.Time)
		out[b.nSamples] = [3]int64{r.Count, r.Total, r.Self}
		b.appendSample(Sample{Time: r.Time, PID: r.PID, TID: r.TID, Stack: b.stack(r.PID, addrs[:], false), CPU: -1})
		if r.Timed {
			b.callStats.timed = true
		}
	}
	if s := b.callStats; s.lostRecords > 0 {
		b.p.Warnings = append(b.p.Warnings, fmt.Sprintf("probes: the perf rings lost %d records: the calls they held are missing from the counts", s.lostRecords))
	}
	if s := b.callStats; len(s.probes) > 0 && s.lost > 0 {
		b.p.Warnings = append(b.p.Warnings, fmt.Sprintf("probes: %d probed calls not counted (an entry or a return without the other: entered before the recording, nested too deep, lost, or still running at the end)", s.lost))
	} else if s.lost > 0 || s.untimed > 0 {
		b.p.Warnings = append(b.p.Warnings, fmt.Sprintf("calls: %d calls were not recorded (threads still running at exit, rings full, signal handlers), %d counted without their time (nested too deep)", s.lost, s.untimed))
	}
	return out
}

// CallsRecorded says whether the capture was recorded with --calls, and
// whether some calls have their time measured (-finstrument-functions).
func (p *Profile) CallsRecorded() (recorded, timed bool) {
	return p.callStats.recorded || p.callCol > 0, p.callStats.timed
}

// ProbeRanges returns what record --probe counted of each probed
// function over its threads and callers (calls, total, shortest and
// longest call), sorted by name; nil for other captures. Per-thread and
// per-caller counts are the calls columns' samples.
func (p *Profile) ProbeRanges() []capture.ProbeRange {
	return p.callStats.probes
}
