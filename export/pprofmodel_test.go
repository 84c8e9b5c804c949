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

// The pprof model the export's encoder is checked against: built with
// google/pprof's own types from the view, as the export was written
// before it encoded the profile itself.

// pprofBuilder turns a view into a profile.Profile.
type pprofBuilder struct {
	v    *analyze.View
	p    *profile.Profile
	locs []*profile.Location // by FrameID
	// sameLoc holds the location of each builderLocKey.
	sameLoc map[builderLocKey]*profile.Location
	funcs   []*profile.Function // by FuncID
	// inlined are the functions of inline frames, by name and file.
	inlined  map[[2]string]*profile.Function
	mappings map[mappingKey]*profile.Mapping
	kernel   *profile.Mapping
}

// buildPprof builds the pprof profile [Pprof] describes with
// google/pprof's model, independently of the encoder.
func buildPprof(v *analyze.View, o Options) (*profile.Profile, error) {
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
		sameLoc:  make(map[builderLocKey]*profile.Location),
		funcs:    make([]*profile.Function, len(v.Funcs)),
		mappings: make(map[mappingKey]*profile.Mapping),
		inlined:  make(map[[2]string]*profile.Function),
	}
	if t, err := time.Parse(time.RFC3339Nano, v.Header.CaptureTime); err == nil {
		b.p.TimeNanos = t.UnixNano()
	}
	// A sample's comm is its process's at the sample's time: a process
	// that exec'd has samples of each program it ran.
	commAt := func(s *analyze.Sample) string {
		if pr := v.Process(s.PID); pr != nil {
			c, _ := pr.NameAt(s.Time)
			return c
		}
		return ""
	}
	type sampleKey struct {
		stack analyze.StackID
		tid   int32
		comm  string
	}
	index := make(map[sampleKey]*profile.Sample)
	// The labels of a thread's samples are the same: one pair of maps
	// each, shared (the encoder only reads them).
	type labels struct {
		str map[string][]string
		num map[string][]int64
	}
	type threadKey struct {
		tid  int32
		comm string
	}
	threads := make(map[threadKey]labels)
	for _, s := range v.Samples {
		comm := commAt(&s)
		k := sampleKey{s.Stack, s.TID, comm}
		if ps := index[k]; ps != nil {
			addValues(v, ps.Value, &s, cols)
			continue
		}
		l, ok := threads[threadKey{s.TID, comm}]
		if !ok || l.num["pid"][0] != int64(s.PID) {
			l = labels{map[string][]string{}, map[string][]int64{"pid": {int64(s.PID)}, "tid": {int64(s.TID)}}}
			processLabels(&profile.Sample{Label: l.str, NumLabel: l.num}, v.Process(s.PID), comm)
			threads[threadKey{s.TID, comm}] = l
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

// processLabels adds the labels comm (the one given), nspid and
// container of process pr (nil when unknown) to sample ps.
func processLabels(ps *profile.Sample, pr *analyze.Process, comm string) {
	if pr == nil {
		return
	}
	if comm != "" {
		ps.Label["comm"] = []string{comm}
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
	// One location for the frames at one address of one mapping named
	// by one analyze.Location, as the writer keeps them.
	k := builderLocKey{mapping: l.Mapping, addr: fr.Addr, fn: fr.Func, line: fr.Loc.Line, file: fr.Loc.File}
	if len(fr.Loc.Inline) > 0 {
		k.inline = fr.Loc
	}
	if same := b.sameLoc[k]; same != nil {
		b.locs[id] = same
		return same
	}
	b.sameLoc[k] = l
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

// builderLocKey identifies a location of the builder (see locKey).
type builderLocKey struct {
	mapping *profile.Mapping
	addr    uint64
	fn      analyze.FuncID
	line    int
	inline  *analyze.Location
	file    string
}
