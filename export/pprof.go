package export

import (
	"fmt"
	"path"
	"slices"
	"strings"
	"time"

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

// pprofBuilder turns a view into a profile.Profile.
type pprofBuilder struct {
	v     *analyze.View
	p     *profile.Profile
	locs  []*profile.Location // by FrameID
	funcs []*profile.Function // by FuncID
	// inlined are the functions of inline frames, by name and file.
	inlined  map[[2]string]*profile.Function
	mappings map[mappingKey]*profile.Mapping
	kernel   *profile.Mapping
}

// Pprof builds the pprof profile of v: one sample per distinct (stack,
// thread) with the values of the view's kind of measurement ("samples"/
// "count" for stack samples, and cpu/nanoseconds when known;
// alloc_objects, alloc_space, inuse_objects, inuse_space, temp_objects and
// temp_space when the view weighs an allocation type, with the sampling
// interval in bytes as Period; calls, and call_time and call_self_time
// when timed, when it weighs instrumented calls, with calls/count as
// PeriodType; off_cpu, wall or blocking nanoseconds, each its own
// PeriodType with Period 1; the type the view weighs is the default),
// locations leaf first with their mapping
// (file, offset, build-id) and function (name, source file and line when
// known), and labels pid, tid and nspid (numbers), comm and container
// (strings). Kernel addresses share one mapping named [kernel.kallsyms],
// with the kernel's build-id when the capture has it.
// A location has a line per function inlined at its address, innermost
// first, then the line of the function the code is in, when the capture
// (or the host's files) had DWARF for it. v.Invert is ignored.
func Pprof(v *analyze.View, o Options) (*profile.Profile, error) {
	o.setDefaults()
	cols := pprofColumns(v)
	h := newPprofHeader(v, cols)
	types := make([]*profile.ValueType, len(cols))
	for i, t := range h.types {
		types[i] = &profile.ValueType{Type: t.Type, Unit: t.Unit}
	}
	period := &profile.ValueType{Type: h.period.Type, Unit: h.period.Unit}
	periodN := h.periodN
	b := &pprofBuilder{
		v: v,
		p: &profile.Profile{
			SampleType:        types,
			DefaultSampleType: types[slices.Index(cols, v.Selected())].Type,
			PeriodType:        period,
			Period:            periodN,
			DurationNanos:     v.Duration(),
			Comments:          []string{o.Title},
		},
		locs:     make([]*profile.Location, len(v.Frames)),
		funcs:    make([]*profile.Function, len(v.Funcs)),
		mappings: make(map[mappingKey]*profile.Mapping),
		inlined:  make(map[[2]string]*profile.Function),
	}
	if t, err := time.Parse(time.RFC3339Nano, v.Header.CaptureTime); err == nil {
		b.p.TimeNanos = t.UnixNano()
	}
	type sampleKey struct {
		stack analyze.StackID
		tid   int32
	}
	index := make(map[sampleKey]*profile.Sample)
	// The labels of a thread's samples are the same: one pair of maps
	// each, shared (the encoder only reads them).
	type labels struct {
		str map[string][]string
		num map[string][]int64
	}
	threads := make(map[int32]labels)
	for _, s := range v.Samples {
		k := sampleKey{s.Stack, s.TID}
		if ps := index[k]; ps != nil {
			addValues(v, ps.Value, &s, cols)
			continue
		}
		l, ok := threads[s.TID]
		if !ok || l.num["pid"][0] != int64(s.PID) {
			l = labels{map[string][]string{}, map[string][]int64{"pid": {int64(s.PID)}, "tid": {int64(s.TID)}}}
			processLabels(&profile.Sample{Label: l.str, NumLabel: l.num}, v.Process(s.PID))
			threads[s.TID] = l
		}
		ps := &profile.Sample{Value: make([]int64, len(cols)), Label: l.str, NumLabel: l.num}
		addValues(v, ps.Value, &s, cols)
		for _, fr := range v.Stack(s.Stack) {
			ps.Location = append(ps.Location, b.location(fr))
		}
		index[k] = ps
		b.p.Sample = append(b.p.Sample, ps)
	}
	if h.cpu && len(b.p.Sample) > 0 {
		b.p.Period = h.cpuPeriod(b.p.Sample[0].Value)
	}
	b.mainFirst()
	if err := b.p.CheckValid(); err != nil {
		return nil, fmt.Errorf("building pprof profile: %w", err)
	}
	return b.p, nil
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

// processLabels adds the labels comm, nspid and container of process pr
// (nil when unknown) to sample ps.
func processLabels(ps *profile.Sample, pr *analyze.Process) {
	if pr == nil {
		return
	}
	if pr.Comm != "" {
		ps.Label["comm"] = []string{pr.Comm}
	}
	if pr.NSPID != 0 {
		ps.NumLabel["nspid"] = []int64{int64(pr.NSPID)}
	}
	if pr.Container != nil {
		ps.Label["container"] = []string{pr.Container.Label()}
	}
}

// mainFirst moves the mapping of the main executable to the front, where
// pprof looks for it ("File:" in its reports): the mapping of the file
// the most sampled process runs, by command line or comm.
func (b *pprofBuilder) mainFirst() {
	var top *analyze.Process
	for _, pr := range b.v.Processes {
		if top == nil || pr.Samples > top.Samples {
			top = pr
		}
	}
	b.mainFirstOf(top)
}

// mainFirstOf moves the mapping of pr's executable to the front.
func (b *pprofBuilder) mainFirstOf(pr *analyze.Process) {
	if pr == nil {
		return
	}
	exe, _, _ := strings.Cut(pr.Cmdline, " ")
	for i, m := range b.p.Mapping {
		if m.File != "" && (m.File == exe || path.Base(m.File) == pr.Comm) {
			ms := b.p.Mapping
			copy(ms[1:i+1], ms[:i])
			ms[0] = m
			for j, m := range ms {
				m.ID = uint64(j + 1)
			}
			return
		}
	}
}

func (b *pprofBuilder) location(id analyze.FrameID) *profile.Location {
	if l := b.locs[id]; l != nil {
		return l
	}
	fr := &b.v.Frames[id]
	l := &profile.Location{ID: uint64(len(b.p.Location) + 1), Address: fr.Addr, Mapping: b.mapping(fr)}
	for _, in := range fr.Loc.Inline {
		l.Line = append(l.Line, profile.Line{Function: b.inlineFunction(in), Line: int64(in.Line)})
	}
	l.Line = append(l.Line, profile.Line{Function: b.function(fr), Line: int64(fr.Loc.Line)})
	b.locs[id] = l
	b.p.Location = append(b.p.Location, l)
	return l
}

func (b *pprofBuilder) function(fr *analyze.Frame) *profile.Function {
	if f := b.funcs[fr.Func]; f != nil {
		if f.Filename == "" && fr.Loc.File != "" {
			f.Filename = fr.Loc.File
		}
		return f
	}
	fn := &b.v.Funcs[fr.Func]
	f := &profile.Function{ID: uint64(len(b.p.Function) + 1), Name: fn.Name, SystemName: fn.Name, Filename: fr.Loc.File}
	b.funcs[fr.Func] = f
	b.p.Function = append(b.p.Function, f)
	return f
}

// inlineFunction returns the pprof function of an inlined call.
func (b *pprofBuilder) inlineFunction(in analyze.Location) *profile.Function {
	k := [2]string{in.Function, in.File}
	if f := b.inlined[k]; f != nil {
		return f
	}
	f := &profile.Function{ID: uint64(len(b.p.Function) + 1), Name: in.Function, SystemName: in.Function, Filename: in.File}
	b.inlined[k] = f
	b.p.Function = append(b.p.Function, f)
	return f
}

// mapping returns the pprof mapping of a frame: the process's mapping
// holding it, the kernel's, or nil (JIT code, unmapped addresses).
func (b *pprofBuilder) mapping(fr *analyze.Frame) *profile.Mapping {
	if fr.Kernel {
		if b.kernel == nil {
			b.kernel = b.newMapping(mappingKey{start: fr.Addr, end: fr.Addr + 1, file: kernelMapping, buildID: b.v.KernelBuildID})
		}
		b.kernel.Start = min(b.kernel.Start, fr.Addr)
		b.kernel.Limit = max(b.kernel.Limit, fr.Addr+1)
		return b.kernel
	}
	m := b.v.Mapping(fr.PID, fr.Addr)
	if m == nil {
		return nil
	}
	k := mappingKey{m.Start, m.End, m.Offset, m.File, m.BuildID}
	if pm := b.mappings[k]; pm != nil {
		b.noteLines(pm, fr)
		return pm
	}
	pm := b.newMapping(k)
	b.mappings[k] = pm
	b.noteLines(pm, fr)
	return pm
}

func (b *pprofBuilder) newMapping(k mappingKey) *profile.Mapping {
	pm := &profile.Mapping{ID: uint64(len(b.p.Mapping) + 1), Start: k.start, Limit: k.end, Offset: k.offset,
		File: k.file, BuildID: k.buildID, HasFunctions: true}
	b.p.Mapping = append(b.p.Mapping, pm)
	return pm
}

// noteLines marks a mapping as having file names and line numbers when a
// frame in it has them.
func (b *pprofBuilder) noteLines(pm *profile.Mapping, fr *analyze.Frame) {
	if fr.Loc.File != "" {
		pm.HasFilenames = true
	}
	if fr.Loc.Line > 0 {
		pm.HasLineNumbers = true
	}
}
