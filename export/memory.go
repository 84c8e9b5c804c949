package export

import (
	"bufio"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/pprof/profile"

	"nsprof/analyze"
)

// MemValue says what weighs a stack in a memory export. The names are
// those of the sample types of Go heap profiles, which pprof's
// -sample_index takes.
type MemValue int

// Memory values. The zero value is [AllocSpace].
const (
	// AllocSpace is the bytes allocated during the recording.
	AllocSpace MemValue = iota
	// AllocObjects is the number of blocks allocated.
	AllocObjects
	// InuseSpace is the bytes still live when the recording ended:
	// allocated while recording and never freed.
	InuseSpace
	// InuseObjects is the number of blocks still live at the end.
	InuseObjects
)

// memValueNames are the pprof sample types, in the order of the values
// of a memory pprof sample (Go's heap profile order).
var memValueNames = [...]string{AllocObjects: "alloc_objects", AllocSpace: "alloc_space", InuseObjects: "inuse_objects", InuseSpace: "inuse_space"}

// String returns the value's pprof sample type name.
func (v MemValue) String() string {
	if v >= 0 && int(v) < len(memValueNames) {
		return memValueNames[v]
	}
	return fmt.Sprintf("MemValue(%d)", int(v))
}

// ParseMemValue accepts alloc_space, alloc_objects, inuse_space or
// inuse_objects.
func ParseMemValue(s string) (MemValue, error) {
	for v, name := range memValueNames {
		if s == name {
			return MemValue(v), nil
		}
	}
	return 0, fmt.Errorf("unknown memory value %q (want alloc_space, alloc_objects, inuse_space or inuse_objects)", s)
}

// bytes reports whether the value is a size rather than a count.
func (v MemValue) bytes() bool { return v == AllocSpace || v == InuseSpace }

// of returns the value of stack s, objects rounded to whole blocks (they
// are estimates in a sampled capture).
func (v MemValue) of(s *analyze.MemStack) int64 {
	switch v {
	case AllocObjects:
		return int64(math.Round(s.Objects))
	case InuseSpace:
		return s.LeakBytes
	case InuseObjects:
		return int64(math.Round(s.LeakObjects))
	}
	return s.Bytes
}

// MemoryOptions configure [GenerateMemory]. The zero value is the default.
type MemoryOptions struct {
	Options
	// Value weighs the stacks of folded stacks, speedscope and the SVG;
	// pprof carries all four values and makes Value the default.
	Value MemValue
	// Invert puts the allocating function at the root (not for pprof).
	Invert bool
}

// GenerateMemory writes the heap profile m of the capture p in format f.
// Stacks are those of [analyze.Memory.Stacks], so the numbers are those
// of nsprof report --memory. Only [analyze.GroupProcess] and
// [analyze.GroupNone] are valid for o.By: allocations carry no thread.
func GenerateMemory(w io.Writer, p *analyze.Profile, m *analyze.Memory, f Format, o MemoryOptions) error {
	o.setDefaults()
	if o.By != analyze.GroupNone && o.By != analyze.GroupProcess {
		return fmt.Errorf("memory export: grouping by %v (only by process)", o.By)
	}
	switch f {
	case FormatPprof:
		pp, err := PprofMemory(p, m, o.Options)
		if err != nil {
			return err
		}
		pp.DefaultSampleType = o.Value.String()
		return pp.Write(w)
	case FormatFolded:
		return writeMemFolded(w, p, m, o)
	case FormatSpeedscope:
		return writeMemSpeedscope(w, p, m, o)
	case FormatSVG:
		nodes := buildMemFlame(p, m, o)
		unit := "objects"
		if o.Value.bytes() {
			unit = "bytes"
		}
		return renderFlame(w, nodes, o.Invert, unit, o.Options)
	}
	return fmt.Errorf("export: %v", f)
}

// PprofMemory builds the pprof heap profile of m, like a Go heap profile:
// sample types alloc_objects/count, alloc_space/bytes, inuse_objects/count
// and inuse_space/bytes, one sample per distinct (process, stack), the
// same locations, mappings, functions and process labels as [Pprof].
// "In use" is what was allocated while recording and still live at its
// end. The default sample type is alloc_space: a capture covers a run of
// a program, where what it allocated matters more than what it left
// (pprof -sample_index=inuse_space shows that). In a sampled capture the
// values are the unbiased estimates nsprof report --memory prints,
// objects rounded per stack; Period is the sampling interval in bytes.
func PprofMemory(p *analyze.Profile, m *analyze.Memory, o Options) (*profile.Profile, error) {
	o.setDefaults()
	period := m.SampleBytes
	if period <= 0 {
		period = 1
	}
	b := &pprofBuilder{
		v: &analyze.View{Profile: p},
		p: &profile.Profile{
			SampleType: []*profile.ValueType{
				{Type: "alloc_objects", Unit: "count"}, {Type: "alloc_space", Unit: "bytes"},
				{Type: "inuse_objects", Unit: "count"}, {Type: "inuse_space", Unit: "bytes"},
			},
			DefaultSampleType: "alloc_space",
			PeriodType:        &profile.ValueType{Type: "space", Unit: "bytes"},
			Period:            period,
			DurationNanos:     p.Duration(),
			Comments:          []string{o.Title},
		},
		mappings: make(map[mappingKey]*profile.Mapping),
		inlined:  make(map[[2]string]*profile.Function),
	}
	if t, err := time.Parse(time.RFC3339Nano, p.Header.CaptureTime); err == nil {
		b.p.TimeNanos = t.UnixNano()
	}
	locs := make(map[memLocKey]*profile.Location)
	funcs := make(map[[2]string]*profile.Function)
	bytesOf := make(map[int32]int64)
	for i := range m.Stacks {
		s := &m.Stacks[i]
		if s.Allocs == 0 {
			continue
		}
		bytesOf[s.PID] += s.Bytes
		ps := &profile.Sample{
			Value: []int64{AllocObjects.of(s), s.Bytes, InuseObjects.of(s), s.LeakBytes},
			Label: map[string][]string{}, NumLabel: map[string][]int64{"pid": {int64(s.PID)}},
		}
		processLabels(ps, p.Process(s.PID))
		for j, a := range s.Addrs {
			k := memLocKey{s.PID, a}
			l := locs[k]
			if l == nil {
				fr := &analyze.Frame{PID: s.PID, Addr: a, Loc: s.Locs[j]}
				fk := [2]string{fr.Loc.Function, fr.Loc.DSO}
				f := funcs[fk]
				if f == nil {
					f = &profile.Function{ID: uint64(len(b.p.Function) + 1), Name: fr.Loc.Function, SystemName: fr.Loc.Function, Filename: fr.Loc.File}
					funcs[fk] = f
					b.p.Function = append(b.p.Function, f)
				} else if f.Filename == "" {
					f.Filename = fr.Loc.File
				}
				l = &profile.Location{ID: uint64(len(b.p.Location) + 1), Address: a, Mapping: b.mapping(fr)}
				// As the CPU profile: a line per inlined call,
				// innermost first, then the function's.
				for _, in := range fr.Loc.Inline {
					l.Line = append(l.Line, profile.Line{Function: b.inlineFunction(in), Line: int64(in.Line)})
				}
				l.Line = append(l.Line, profile.Line{Function: f, Line: int64(fr.Loc.Line)})
				locs[k] = l
				b.p.Location = append(b.p.Location, l)
			}
			ps.Location = append(ps.Location, l)
		}
		b.p.Sample = append(b.p.Sample, ps)
	}
	var top int32 = -1
	for pid, n := range bytesOf {
		if top < 0 || n > bytesOf[top] || n == bytesOf[top] && pid < top {
			top = pid
		}
	}
	b.mainFirstOf(p.Process(top))
	if err := b.p.CheckValid(); err != nil {
		return nil, fmt.Errorf("building pprof memory profile: %w", err)
	}
	return b.p, nil
}

type memLocKey struct {
	pid  int32
	addr uint64
}

// memPath is one stack of a memory export, root first unless inverted.
type memPath struct {
	root  string
	locs  []analyze.Location
	value int64
}

// memPaths returns the stacks of m with their values, grouped as o says;
// stacks of value 0 are left out.
func memPaths(p *analyze.Profile, m *analyze.Memory, o MemoryOptions) []memPath {
	var out []memPath
	for i := range m.Stacks {
		s := &m.Stacks[i]
		n := o.Value.of(s)
		if n <= 0 {
			continue
		}
		mp := memPath{locs: slices.Clone(s.Frames), value: n}
		if !o.Invert {
			slices.Reverse(mp.locs)
		}
		if o.By == analyze.GroupProcess {
			mp.root = processRoot(p, s.PID)
		}
		out = append(out, mp)
	}
	return out
}

// processRoot labels a process as grouped exports do: "comm [pid N]".
func processRoot(p *analyze.Profile, pid int32) string {
	comm := ""
	if pr := p.Process(pid); pr != nil {
		comm = pr.Comm
	}
	return strings.TrimSpace(comm + " [pid " + strconv.Itoa(int(pid)) + "]")
}

// writeMemFolded writes "root;…;leaf VALUE" lines, sorted.
func writeMemFolded(w io.Writer, p *analyze.Profile, m *analyze.Memory, o MemoryOptions) error {
	merged := make(map[string]int64)
	var lines []string
	var b strings.Builder
	for _, mp := range memPaths(p, m, o) {
		b.Reset()
		if mp.root != "" {
			b.WriteString(foldedName(mp.root))
		}
		for _, l := range mp.locs {
			if b.Len() > 0 {
				b.WriteByte(';')
			}
			b.WriteString(foldedName(l.Function))
		}
		if len(mp.locs) == 0 {
			if b.Len() > 0 {
				b.WriteByte(';')
			}
			b.WriteString(noStack)
		}
		k := b.String()
		if _, ok := merged[k]; !ok {
			lines = append(lines, k)
		}
		merged[k] += mp.value
	}
	slices.Sort(lines)
	bw := bufio.NewWriterSize(w, 64*1024)
	for _, l := range lines {
		bw.WriteString(l)
		bw.WriteByte(' ')
		bw.WriteString(strconv.FormatInt(merged[l], 10))
		bw.WriteByte('\n')
	}
	return bw.Flush()
}

// writeMemSpeedscope writes one speedscope "sampled" profile per process
// (allocations carry no thread): one entry per stack, weighted by the
// value in bytes (unit "bytes") or objects (unit "none").
func writeMemSpeedscope(w io.Writer, p *analyze.Profile, m *analyze.Memory, o MemoryOptions) error {
	type key [2]string
	frameOf := make(map[key]int)
	var frames []ssFrame
	type entry struct {
		frames []int
		value  int64
	}
	byPID := make(map[int32][]entry)
	var pids []int32
	for i := range m.Stacks {
		s := &m.Stacks[i]
		n := o.Value.of(s)
		if n <= 0 {
			continue
		}
		e := entry{value: n}
		for j := len(s.Frames) - 1; j >= 0; j-- {
			l := s.Frames[j]
			if o.Invert {
				l = s.Frames[len(s.Frames)-1-j]
			}
			k := key{l.Function, l.DSO}
			id, ok := frameOf[k]
			if !ok {
				id = len(frames)
				frameOf[k] = id
				sf := ssFrame{Name: l.Function, File: l.DSO}
				if l.File != "" {
					sf.File, sf.Line = l.File, l.Line
				}
				frames = append(frames, sf)
			}
			e.frames = append(e.frames, id)
		}
		if _, ok := byPID[s.PID]; !ok {
			pids = append(pids, s.PID)
		}
		byPID[s.PID] = append(byPID[s.PID], e)
	}
	slices.Sort(pids)
	unit := "none"
	if o.Value.bytes() {
		unit = "bytes"
	}
	doc := struct {
		Schema   string    `json:"$schema"`
		Name     string    `json:"name"`
		Exporter string    `json:"exporter"`
		Active   int       `json:"activeProfileIndex"`
		Shared   ssShared  `json:"shared"`
		Profiles []ssMemPr `json:"profiles"`
	}{Schema: speedscopeSchema, Name: o.Title, Exporter: "nsprof", Shared: ssShared{Frames: frames}}
	if doc.Shared.Frames == nil {
		doc.Shared.Frames = []ssFrame{}
	}
	doc.Profiles = []ssMemPr{}
	for _, pid := range pids {
		pr := ssMemPr{Type: "sampled", Name: processRoot(p, pid) + " " + o.Value.String(), Unit: unit, Samples: [][]int{}, Weights: []int64{}}
		for _, e := range byPID[pid] {
			if e.frames == nil {
				e.frames = []int{}
			}
			pr.Samples = append(pr.Samples, e.frames)
			pr.Weights = append(pr.Weights, e.value)
			pr.EndValue += e.value
		}
		doc.Profiles = append(doc.Profiles, pr)
	}
	bw := bufio.NewWriterSize(w, 256*1024)
	enc := json.NewEncoder(bw)
	if err := enc.Encode(doc); err != nil {
		return err
	}
	return bw.Flush()
}

type ssShared struct {
	Frames []ssFrame `json:"frames"`
}

// ssMemPr is a speedscope sampled profile of a memory export.
type ssMemPr struct {
	Type       string  `json:"type"`
	Name       string  `json:"name"`
	Unit       string  `json:"unit"`
	StartValue int64   `json:"startValue"`
	EndValue   int64   `json:"endValue"`
	Samples    [][]int `json:"samples"`
	Weights    []int64 `json:"weights"`
}

// buildMemFlame merges the memory paths into a flame graph tree.
func buildMemFlame(p *analyze.Profile, m *analyze.Memory, o MemoryOptions) []flameNode {
	type key struct {
		parent    int32
		name, dso string
		grp       bool
	}
	nodes := []flameNode{{name: "all"}}
	index := make(map[key]int32)
	child := func(parent int32, k key) int32 {
		k.parent = parent
		n, ok := index[k]
		if !ok {
			n = int32(len(nodes))
			index[k] = n
			nodes = append(nodes, flameNode{name: k.name, dso: k.dso, grp: k.grp, depth: nodes[parent].depth + 1})
			nodes[parent].children = append(nodes[parent].children, n)
		}
		return n
	}
	for _, mp := range memPaths(p, m, o) {
		v := int(mp.value)
		nodes[0].total += v
		cur := int32(0)
		if mp.root != "" {
			cur = child(cur, key{name: mp.root, grp: true})
			nodes[cur].total += v
		}
		for _, l := range mp.locs {
			cur = child(cur, key{name: l.Function, dso: l.DSO})
			nodes[cur].total += v
		}
	}
	for i := range nodes {
		slices.SortFunc(nodes[i].children, func(a, b int32) int { return cmp.Compare(nodes[a].name, nodes[b].name) })
	}
	return nodes
}
