package record

import (
	"strings"
	"testing"
	"time"
)

// A container is recorded with CPU samples alone: the options that need
// per-task events, pids or the preloaded library are refused with it.
func TestContainerOptionsRefused(t *testing.T) {
	for name, o := range map[string]Options{
		"pids":     {PIDs: []int{1}},
		"system":   {System: true, Command: []string{"true"}},
		"off-CPU":  {OffCPU: true},
		"blocking": {Blocking: time.Millisecond},
		"memprof":  {Memprof: true, Command: []string{"true"}},
		"no perf":  {NoPerf: true},
	} {
		o.Container = "web"
		if err := o.setDefaults(); err == nil || !strings.Contains(err.Error(), "container") {
			t.Errorf("%s: %v, want the container's refusal", name, err)
		}
	}
	o := Options{Container: "web", DWARFStack: 8192}
	if err := o.setDefaults(); err != nil {
		t.Errorf("DWARF stacks of a container: %v", err)
	}
}
