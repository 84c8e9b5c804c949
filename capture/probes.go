package capture

import (
	"fmt"
	"strconv"
	"strings"
)

// Metadata of a recording with --probe: its calls are the arcs of
// [CallsFile] (with [MetaCalls] and the counts --calls writes), and
// these. MetaProbeLostRecords counts the perf records the rings lost,
// whose calls are missing; each MetaProbeRange value is the
// [FormatProbeRange] of one probed function.
const (
	MetaProbeLostRecords = "nsprof.probe.lost_records"
	MetaProbeRange       = "nsprof.probe.range"
)

// ProbeRange is what a recording with --probe counted of one probed
// function, over its threads and callers: the calls, their total time
// and the shortest and longest one, in nanoseconds.
type ProbeRange struct {
	// Func is LIB:FUNCTION, the spec's LIB and the function's name.
	Func                   string
	Calls, Total, Min, Max int64
}

// FormatProbeRange encodes r as "CALLS TOTAL MIN MAX FUNC".
func FormatProbeRange(r ProbeRange) string {
	return fmt.Sprintf("%d %d %d %d %s", r.Calls, r.Total, r.Min, r.Max, r.Func)
}

// ParseProbeRange decodes a [FormatProbeRange] value.
func ParseProbeRange(s string) (ProbeRange, error) {
	f := strings.SplitN(s, " ", 5)
	if len(f) != 5 || f[4] == "" {
		return ProbeRange{}, fmt.Errorf("%s %q: want CALLS TOTAL MIN MAX FUNC", MetaProbeRange, s)
	}
	var n [4]int64
	for i := range n {
		v, err := strconv.ParseInt(f[i], 10, 64)
		if err != nil || v < 0 {
			return ProbeRange{}, fmt.Errorf("%s %q: field %d is not a count", MetaProbeRange, s, i+1)
		}
		n[i] = v
	}
	if n[2] > n[3] {
		return ProbeRange{}, fmt.Errorf("%s %q: shortest call above the longest", MetaProbeRange, s)
	}
	return ProbeRange{Func: f[4], Calls: n[0], Total: n[1], Min: n[2], Max: n[3]}, nil
}
