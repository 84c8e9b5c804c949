package export

import (
	"bytes"
	"fmt"

	"github.com/google/pprof/profile"

	"nsprof/analyze"
)

// kernelMapping names the mapping of kernel addresses, as perf does.
const kernelMapping = "[kernel.kallsyms]"

// mappingKey identifies a mapping across processes: the same file mapped
// at the same place is one pprof mapping.
type mappingKey struct {
	start, end, offset uint64
	file, buildID      string
}

// Pprof returns the pprof profile of v, as `export --format pprof` writes
// it (decoded by google/pprof): one sample per distinct (stack,
// thread) with the values of the view's kind of measurement ("samples"/
// "count" for stack samples, and cpu/nanoseconds when known;
// alloc_objects, alloc_space, inuse_objects, inuse_space, temp_objects and
// temp_space when the view weighs an allocation type, with the sampling
// interval in bytes as Period; calls, and call_time and call_self_time
// when timed, when it weighs instrumented calls, with calls/count as
// PeriodType; off_cpu, wall or blocking nanoseconds, each its own
// PeriodType with Period 1; the type the view weighs is the default),
// locations leaf first with their mapping (file, offset, build-id) and
// function (name, source file and line when
// known), and labels pid, tid and nspid (numbers), comm and container
// (strings). Kernel addresses share one mapping named [kernel.kallsyms],
// with the kernel's build-id when the capture has it.
// A location has a line per function inlined at its address, innermost
// first, then the line of the function the code is in, when the capture
// (or the host's files) had DWARF for it. v.Invert is ignored.
func Pprof(v *analyze.View, o Options) (*profile.Profile, error) {
	o.setDefaults()
	w := newWireWriter(v)
	w.collect()
	var buf bytes.Buffer
	if err := w.write(&buf, o); err != nil {
		return nil, err
	}
	p, err := profile.ParseUncompressed(buf.Bytes())
	if err != nil {
		return nil, fmt.Errorf("building pprof profile: %w", err)
	}
	return p, nil
}

// pprofHeader is what describes the values of a pprof profile of a view.
type pprofHeader struct {
	// types are the sample types of the columns.
	types []analyze.ValueType
	// period and periodN are the period type and the period.
	period  analyze.ValueType
	periodN int64
	// cpu says the period is CPU time, periodN to be set from the
	// first sample's values by cpuPeriod.
	cpu bool
}

// newPprofHeader returns the header of a pprof profile of v with columns
// cols: a sample of stacks ("samples"/"count", period 1), or of CPU time
// as a Go CPU profile when the second column is cpu (a sample every
// Period ns); the sampling interval in bytes of allocations
// ("space"/"bytes", as a Go heap profile's MemProfileRate); one call of
// instrumented calls; and one nanosecond of the off-CPU, wall and
// blocking times.
func newPprofHeader(v *analyze.View, cols []int) pprofHeader {
	h := pprofHeader{types: make([]analyze.ValueType, len(cols)), period: analyze.SamplesType, periodN: 1}
	for i, c := range cols {
		h.types[i] = analyze.SamplesType
		if len(v.SampleTypes) > 0 {
			h.types[i] = v.SampleTypes[c]
		}
	}
	switch first := h.types[0].Type; {
	case analyze.IsAllocType(first):
		h.period = analyze.ValueType{Type: "space", Unit: "bytes"}
		if v.SampleBytes() > 0 {
			h.periodN = v.SampleBytes()
		}
	case analyze.IsCallsType(first):
		h.period = analyze.CallsType
	case cols[0] != 0:
		h.period = analyze.ValueType{Type: first, Unit: h.types[0].Unit}
	}
	if len(cols) > 1 && h.types[1].Type == analyze.CPUType.Type {
		h.period, h.cpu = analyze.CPUType, true
	}
	return h
}

// cpuPeriod returns the nanoseconds of CPU time a sample stands for,
// from the values of a sample (count, then cpu), or 1 when they do not
// tell.
func (h pprofHeader) cpuPeriod(first []int64) int64 {
	if first[0] > 0 {
		return first[1] / first[0]
	}
	return 1
}

// pprofColumns returns the sample types (indexes in v.SampleTypes) a
// pprof profile of v carries: those of the kind of value v selects, so
// that pprof's -sample_index can switch between them. Stack samples have
// "samples" (and "cpu"); allocations the four of a Go heap profile and
// the two temporary ones.
func pprofColumns(v *analyze.View) []int {
	if len(v.SampleTypes) == 0 {
		return []int{0}
	}
	return v.Kind(v.Selected())
}

// addValues adds the values of columns cols of s to vals.
func addValues(v *analyze.View, vals []int64, s *analyze.Sample, cols []int) {
	if len(v.SampleTypes) == 0 {
		vals[0]++
		return
	}
	for i, c := range cols {
		vals[i] += v.Value(s, c)
	}
}
