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
	// OffCPU is the sum of its off-CPU profiles' values (nanoseconds),
	// and OffCPUTotal that of each function name, once per stack.
	OffCPU      int64
	OffCPUTotal map[string]int64
}

// ReadCollected decodes the file exporter's JSON lines (one request each)
// and sums the samples by process and function, the CPU profiles'
// (sample type samples) and the off-CPU ones' (off_cpu, nanoseconds)
// apart; it returns the CPU profiles' start times in the order the
// requests arrived.
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
				cp = &CollectedProcess{Attrs: attrs, Total: map[string]int{}, OffCPUTotal: map[string]int64{}}
				procs[pid] = cp
			}
			for _, sp := range rp.ScopeProfiles().All() {
				for _, prof := range sp.Profiles().All() {
					tp, unit := strs.At(int(prof.SampleType().TypeStrindex())), strs.At(int(prof.SampleType().UnitStrindex()))
					off := tp == "off_cpu" && unit == "nanoseconds"
					if tp != "samples" && !off {
						t.Errorf("pid %d: sample type %q (%s), want samples or off_cpu", pid, tp, unit)
					}
					if !off {
						times = append(times, prof.Time().AsTime())
					}
					for _, s := range prof.Samples().All() {
						n := int64(0)
						for _, v := range s.Values().All() {
							n += v
						}
						if off {
							cp.OffCPU += n
						} else {
							cp.Samples += n
						}
						seen := map[string]bool{}
						st := dict.StackTable().At(int(s.StackIndex()))
						for _, li := range st.LocationIndices().All() {
							for _, ln := range dict.LocationTable().At(int(li)).Lines().All() {
								name := strs.At(int(dict.FunctionTable().At(int(ln.FunctionIndex())).NameStrindex()))
								if seen[name] {
									continue
								}
								seen[name] = true
								if off {
									cp.OffCPUTotal[name] += n
								} else {
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
