package testutils

import (
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pprofile"
)

// CollectedProcess is what a real collector received for one process,
// summed over every request.
type CollectedProcess struct {
	// Attrs are the resource attributes of its first profile.
	Attrs map[string]any
	// Samples is the sum of its samples' values.
	Samples int64
	// Total counts the samples of each function name once per stack.
	Total map[string]int
}

// ReadCollected decodes the file exporter's JSON lines (one request each)
// and sums the samples by process and function; it returns the profiles'
// start times in the order the requests arrived.
func ReadCollected(t testing.TB, lines []string) (map[int64]*CollectedProcess, []time.Time) {
	t.Helper()
	procs := map[int64]*CollectedProcess{}
	var times []time.Time
	for i, line := range lines {
		ps, err := (&pprofile.JSONUnmarshaler{}).UnmarshalProfiles([]byte(line))
		if err != nil {
			t.Fatalf("line %d of the file exporter: %v", i+1, err)
		}
		dict := ps.Dictionary()
		strs := dict.StringTable()
		for _, rp := range ps.ResourceProfiles().All() {
			attrs := rp.Resource().Attributes().AsRaw()
			pid, _ := attrs["process.pid"].(int64)
			cp := procs[pid]
			if cp == nil {
				cp = &CollectedProcess{Attrs: attrs, Total: map[string]int{}}
				procs[pid] = cp
			}
			for _, sp := range rp.ScopeProfiles().All() {
				for _, prof := range sp.Profiles().All() {
					if tp := strs.At(int(prof.SampleType().TypeStrindex())); tp != "samples" {
						t.Errorf("pid %d: sample type %q, want samples", pid, tp)
					}
					times = append(times, prof.Time().AsTime())
					for _, s := range prof.Samples().All() {
						n := int64(0)
						for _, v := range s.Values().All() {
							n += v
						}
						cp.Samples += n
						seen := map[string]bool{}
						st := dict.StackTable().At(int(s.StackIndex()))
						for _, li := range st.LocationIndices().All() {
							for _, ln := range dict.LocationTable().At(int(li)).Lines().All() {
								name := strs.At(int(dict.FunctionTable().At(int(ln.FunctionIndex())).NameStrindex()))
								if !seen[name] {
									seen[name] = true
									cp.Total[name] += int(n)
								}
							}
						}
					}
				}
			}
		}
	}
	return procs, times
}
