// Package otlp turns nsprof's profiles into OpenTelemetry profiles (the
// OTLP profiles signal, v1development, in the collector's own pdata
// model) and sends them to an OTLP receiver such as the OpenTelemetry
// Collector, over OTLP/HTTP protobuf or OTLP/gRPC, in plain text or TLS.
//
// A request holds a resource per process, which names it (host.name,
// process.pid, process.executable.name, process.command_line, the pid in
// its namespace, and container.id, container.name and
// container.runtime.name for a podman container) and holds its CPU
// profile (stack samples) and, for a capture with off-CPU time, its
// off-CPU profile (sample type off_cpu, nanoseconds); and the dictionary
// the profiles share: strings, mappings with their build ids, functions,
// locations with their source lines (inlined functions first, innermost
// first) and stacks, leaf first. Names that are not valid UTF-8 are sent
// with U+FFFD for each bad byte, as nsprof report
// --json shows them.
package otlp

import (
	"crypto/rand"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pprofile"

	"nsprof/analyze"
)

// Attribute keys nsprof sets beyond the OpenTelemetry semantic
// conventions' (host.name, process.*, container.*, thread.id).
const (
	// AttrNSPID is the resource attribute of a process's pid in its
	// innermost pid namespace, when that differs from process.pid.
	AttrNSPID = "nsprof.process.nspid"
	// AttrContainerKind is what the process runs in: "host", "podman",
	// "flatpak" or "namespace" (analyze.Container.Kind).
	AttrContainerKind = "nsprof.container.kind"
	// AttrBuildID is the mapping attribute of the file's GNU build id, in
	// lowercase hex, as the semantic conventions name it.
	AttrBuildID = "process.executable.build_id.gnu"
)

// kernelFile names the mapping of kernel addresses, as perf does.
const kernelFile = "[kernel.kallsyms]"

// Period is a time range of a capture, from its start: the samples taken
// in [Since, Until) make one request. Until 0 means the capture's end.
type Period struct {
	Since, Until time.Duration
}

// Stats count what an encoding carried and what it left out.
type Stats struct {
	// Samples is the number of stack samples encoded (the sum of the
	// sample values), Processes the number of resources (one per
	// process, with a CPU profile, an off-CPU one or both; one per
	// program a process ran, for a process that exec'd another).
	Samples   int64
	Processes int
	// OffCPU is the off-CPU time encoded, in nanoseconds, and
	// OffCPUIntervals the number of intervals it sums.
	OffCPU, OffCPUIntervals int64
	// Skipped counts the view's samples with neither a stack-sample
	// count nor off-CPU time (allocations, blocking calls): not sent.
	Skipped int64
}

// The sample types of the profiles Encode builds: a CPU profile counts
// stack samples, each standing for a sampling period of CPU time when the
// frequency is known (period type cpu, nanoseconds); an off-CPU profile
// weighs each stack by the time its thread spent off the CPU after
// leaving it there (period type off_cpu, nanoseconds, period 1), as
// export --format pprof --off-cpu names them.
var (
	samplesType = analyze.SamplesType
	offCPUType  = analyze.OffCPUType
)

// Encode builds the OTLP profiles of the stack samples of v, a view with
// its default value (stack samples) and inline frames kept as lines
// (ViewOptions.Inline false): a CPU profile per process with samples and,
// when the capture recorded off-CPU time (record --off-cpu) and the view
// keeps it (ViewOptions.AllKinds), an off-CPU profile per process with
// off-CPU intervals, under the same resource. p
// is the period v covers, which dates the profiles: the capture's
// wall-clock time plus p.Since.
func Encode(v *analyze.View, p Period) (pprofile.Profiles, Stats, error) {
	if v.Selected() != 0 {
		return pprofile.Profiles{}, Stats{}, fmt.Errorf("otlp: the view weighs %s, not stack samples", v.SampleTypes[v.Selected()].Type)
	}
	offCol := slices.Index(v.SampleTypes, offCPUType)
	e := newEncoder(v)
	start, dur := e.window(p)
	byPID := make(map[procKey]*procProfile)
	var order []procKey
	lastPID, lastRenamed := int32(-1), (*analyze.Process)(nil)
	var st Stats
	for i := range v.Samples {
		s := &v.Samples[i]
		n := int64(1)
		if len(v.SampleTypes) > 0 {
			n = v.Value(s, 0)
		}
		var off int64
		if n == 0 && offCol > 0 {
			off = v.Value(s, offCol)
		}
		if n == 0 && off == 0 {
			st.Skipped++
			continue
		}
		if s.PID != lastPID { // samples of a process come in runs
			lastPID, lastRenamed = s.PID, nil
			if pr := v.Process(s.PID); pr != nil && pr.Renamed() {
				lastRenamed = pr
			}
		}
		k := procKey{pid: s.PID}
		if lastRenamed != nil {
			k.program = int32(lastRenamed.NameIndex(s.Time))
		}
		pp := byPID[k]
		if pp == nil {
			pp = &procProfile{cpu: newRows(), off: newRows(), at: s.Time}
			byPID[k] = pp
			order = append(order, k)
		}
		if n > 0 {
			pp.cpu.add(e, s, n)
			st.Samples += n
		} else {
			pp.off.add(e, s, off)
			st.OffCPU += off
			st.OffCPUIntervals++
		}
	}
	for _, k := range order {
		e.resource(k.pid, byPID[k], start, dur)
	}
	st.Processes = len(order)
	return e.out, st, nil
}

// sampleKey identifies one OTLP sample of a process: a stack of a thread.
type sampleKey struct {
	stack analyze.StackID
	tid   int32
}

// sampleRow is one OTLP sample being summed.
type sampleRow struct {
	stack, tid int32
	n          int64
}

// procKey is a resource: a process, and the program it ran (its index
// in the programs of a process that exec'd another, see
// analyze.Process.NameAt; 0 otherwise).
type procKey struct {
	pid, program int32
}

// procProfile collects the samples of one process (one program of it):
// its CPU samples and its off-CPU intervals; at is the time of the first.
type procProfile struct {
	cpu, off *rows
	at       int64
}

// rows sum the samples of one profile by stack and thread.
type rows struct {
	index   map[sampleKey]int
	samples []sampleRow
}

func newRows() *rows { return &rows{index: make(map[sampleKey]int)} }

// add adds n to the row of s's stack and thread.
func (r *rows) add(e *encoder, s *analyze.Sample, n int64) {
	k := sampleKey{s.Stack, s.TID}
	j, ok := r.index[k]
	if !ok {
		j = len(r.samples)
		r.index[k] = j
		r.samples = append(r.samples, sampleRow{stack: e.stack(s.Stack), tid: e.threadAttr(s.TID)})
	}
	r.samples[j].n += n
}

// mappingKey identifies a mapping of the dictionary.
type mappingKey struct {
	start, end, offset uint64
	file, buildID      string
}

// locationKey identifies a location of the dictionary: one address of one
// mapping, named one way.
type locationKey struct {
	mapping int32
	addr    uint64
	loc     *analyze.Location
	fn      analyze.FuncID
}

// encoder builds the shared dictionary, each table's entries indexed so
// that nothing is added twice; entry 0 of every table is the zero value,
// as the protocol requires.
type encoder struct {
	v    *analyze.View
	out  pprofile.Profiles
	dict pprofile.ProfilesDictionary

	strs     map[string]int32
	funcs    map[[2]string]int32
	mappings map[mappingKey]int32
	locs     map[locationKey]int32
	stacks   map[analyze.StackID]int32
	threads  map[int32]int32
	kernel   int32 // the kernel's mapping, 0 before its first frame
}

func newEncoder(v *analyze.View) *encoder {
	e := &encoder{
		v: v, out: pprofile.NewProfiles(),
		strs: make(map[string]int32), funcs: make(map[[2]string]int32),
		mappings: make(map[mappingKey]int32), locs: make(map[locationKey]int32),
		stacks: make(map[analyze.StackID]int32), threads: make(map[int32]int32),
	}
	e.dict = e.out.Dictionary()
	e.str("")
	e.dict.MappingTable().AppendEmpty()
	e.dict.LocationTable().AppendEmpty()
	e.dict.FunctionTable().AppendEmpty()
	e.dict.LinkTable().AppendEmpty()
	e.dict.AttributeTable().AppendEmpty()
	e.dict.StackTable().AppendEmpty()
	return e
}

// window returns the wall-clock start and the length of period p of the
// capture: its start is the capture's creation time (the header's) plus
// p.Since, or the capture clock's start read as Unix time when the header
// has no time.
func (e *encoder) window(p Period) (time.Time, time.Duration) {
	capStart := time.Unix(0, e.v.Start)
	if t, err := time.Parse(time.RFC3339Nano, e.v.Header.CaptureTime); err == nil {
		capStart = t
	}
	end := time.Duration(e.v.End - e.v.Start)
	if p.Until != 0 && p.Until < end {
		end = p.Until
	}
	return capStart.Add(p.Since), max(0, end-p.Since)
}

// str returns the index of s in the string table. Protobuf strings are
// UTF-8: each byte of s that is not is replaced by U+FFFD, as
// encoding/json (nsprof report --json) writes it.
func (e *encoder) str(s string) int32 {
	if i, ok := e.strs[s]; ok {
		return i
	}
	i := int32(e.dict.StringTable().Len())
	e.dict.StringTable().Append(validUTF8(s))
	e.strs[s] = i
	return i
}

// validUTF8 returns s with each byte that is not part of valid UTF-8
// replaced by U+FFFD.
func validUTF8(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			b.WriteRune(utf8.RuneError)
		} else {
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// attr adds an attribute to the table and returns its index.
func (e *encoder) attr(key string, set func(pcommon.Value)) int32 {
	a := e.dict.AttributeTable().AppendEmpty()
	a.SetKeyStrindex(e.str(key))
	set(a.Value())
	return int32(e.dict.AttributeTable().Len() - 1)
}

// threadAttr returns the index of the attribute thread.id=tid.
func (e *encoder) threadAttr(tid int32) int32 {
	if i, ok := e.threads[tid]; ok {
		return i
	}
	i := e.attr("thread.id", func(v pcommon.Value) { v.SetInt(int64(tid)) })
	e.threads[tid] = i
	return i
}

// stack returns the index of the dictionary stack of id, leaf first.
func (e *encoder) stack(id analyze.StackID) int32 {
	if i, ok := e.stacks[id]; ok {
		return i
	}
	st := e.dict.StackTable().AppendEmpty()
	frames := e.v.Stack(id)
	idx := st.LocationIndices()
	idx.EnsureCapacity(len(frames))
	for _, fr := range frames {
		idx.Append(e.location(fr))
	}
	i := int32(e.dict.StackTable().Len() - 1)
	e.stacks[id] = i
	return i
}

// location returns the index of the location of frame id: its address,
// its mapping and a line per inlined function (innermost first), then the
// line of the function the code is in.
func (e *encoder) location(id analyze.FrameID) int32 {
	fr := &e.v.Frames[id]
	k := locationKey{mapping: e.mapping(fr), addr: fr.Addr, loc: fr.Loc, fn: fr.Func}
	if i, ok := e.locs[k]; ok {
		return i
	}
	l := e.dict.LocationTable().AppendEmpty()
	l.SetAddress(fr.Addr)
	l.SetMappingIndex(k.mapping)
	for _, in := range fr.Loc.Inline {
		ln := l.Lines().AppendEmpty()
		ln.SetFunctionIndex(e.function(in.Function, in.File))
		ln.SetLine(int64(in.Line))
	}
	ln := l.Lines().AppendEmpty()
	ln.SetFunctionIndex(e.function(e.v.Funcs[fr.Func].Name, fr.Loc.File))
	ln.SetLine(int64(fr.Loc.Line))
	i := int32(e.dict.LocationTable().Len() - 1)
	e.locs[k] = i
	return i
}

func (e *encoder) function(name, file string) int32 {
	k := [2]string{name, file}
	if i, ok := e.funcs[k]; ok {
		return i
	}
	f := e.dict.FunctionTable().AppendEmpty()
	f.SetNameStrindex(e.str(name))
	f.SetSystemNameStrindex(e.str(name))
	f.SetFilenameStrindex(e.str(file))
	i := int32(e.dict.FunctionTable().Len() - 1)
	e.funcs[k] = i
	return i
}

// mapping returns the index of the mapping holding fr: the process's, the
// kernel's, or 0 (none: JIT code, unmapped addresses).
func (e *encoder) mapping(fr *analyze.Frame) int32 {
	if fr.Kernel {
		if e.kernel == 0 {
			e.kernel = e.newMapping(mappingKey{file: kernelFile, buildID: e.v.KernelBuildID})
		}
		m := e.dict.MappingTable().At(int(e.kernel))
		if m.MemoryStart() == 0 || fr.Addr < m.MemoryStart() {
			m.SetMemoryStart(fr.Addr)
		}
		m.SetMemoryLimit(max(m.MemoryLimit(), fr.Addr+1))
		return e.kernel
	}
	m := e.v.Mapping(fr.PID, fr.Addr)
	if m == nil {
		return 0
	}
	k := mappingKey{m.Start, m.End, m.Offset, m.File, m.BuildID}
	if i, ok := e.mappings[k]; ok {
		return i
	}
	i := e.newMapping(k)
	e.mappings[k] = i
	return i
}

func (e *encoder) newMapping(k mappingKey) int32 {
	m := e.dict.MappingTable().AppendEmpty()
	m.SetMemoryStart(k.start)
	m.SetMemoryLimit(k.end)
	m.SetFileOffset(k.offset)
	m.SetFilenameStrindex(e.str(k.file))
	if k.buildID != "" {
		id := k.buildID
		m.AttributeIndices().Append(e.attr(AttrBuildID, func(v pcommon.Value) { v.SetStr(id) }))
	}
	return int32(e.dict.MappingTable().Len() - 1)
}

// resource adds the resource and scope of process pid, with its CPU
// profile and its off-CPU profile, those that have samples.
func (e *encoder) resource(pid int32, pp *procProfile, start time.Time, dur time.Duration) {
	rp := e.out.ResourceProfiles().AppendEmpty()
	resourceAttrs(rp.Resource().Attributes(), e.v.Hostname, pid, e.v.Process(pid), pp.at)
	sp := rp.ScopeProfiles().AppendEmpty()
	sp.Scope().SetName("nsprof")
	if len(pp.cpu.samples) > 0 {
		prof := e.profile(sp, pp.cpu, samplesType, start, dur)
		if hz := e.v.Frequency; hz > 0 {
			prof.PeriodType().SetTypeStrindex(e.str(analyze.CPUType.Type))
			prof.PeriodType().SetUnitStrindex(e.str(analyze.CPUType.Unit))
			prof.SetPeriod(int64(time.Second) / hz)
		}
	}
	if len(pp.off.samples) > 0 {
		prof := e.profile(sp, pp.off, offCPUType, start, dur)
		prof.PeriodType().SetTypeStrindex(e.str(offCPUType.Type))
		prof.PeriodType().SetUnitStrindex(e.str(offCPUType.Unit))
		prof.SetPeriod(1)
	}
}

// profile adds to sp the profile of the rows rs, of sample type typ.
func (e *encoder) profile(sp pprofile.ScopeProfiles, rs *rows, typ analyze.ValueType, start time.Time, dur time.Duration) pprofile.Profile {
	prof := sp.Profiles().AppendEmpty()
	var id pprofile.ProfileID
	rand.Read(id[:])
	prof.SetProfileID(id)
	prof.SetTime(pcommon.NewTimestampFromTime(start))
	prof.SetDurationNano(uint64(dur))
	prof.SampleType().SetTypeStrindex(e.str(typ.Type))
	prof.SampleType().SetUnitStrindex(e.str(typ.Unit))
	ss := prof.Samples()
	ss.EnsureCapacity(len(rs.samples))
	for _, r := range rs.samples {
		s := ss.AppendEmpty()
		s.SetStackIndex(r.stack)
		s.AttributeIndices().Append(r.tid)
		s.Values().Append(r.n)
	}
	return prof
}

// resourceAttrs sets the attributes naming process pid (pr nil when the
// capture does not describe it) on host, as it was named at time at.
func resourceAttrs(m pcommon.Map, host string, pid int32, pr *analyze.Process, at int64) {
	if host != "" {
		m.PutStr("host.name", validUTF8(host))
	}
	m.PutInt("process.pid", int64(pid))
	if pr == nil {
		return
	}
	comm, cmdline := pr.NameAt(at)
	if comm != "" {
		m.PutStr("process.executable.name", validUTF8(comm))
	}
	if cmdline != "" {
		m.PutStr("process.command_line", validUTF8(cmdline))
	}
	if pr.NSPID != 0 {
		m.PutInt(AttrNSPID, int64(pr.NSPID))
	}
	c := pr.Container
	if c == nil {
		return
	}
	m.PutStr(AttrContainerKind, validUTF8(c.Kind))
	if c.Kind == "podman" {
		m.PutStr("container.runtime.name", "podman")
		if c.ID != "" {
			m.PutStr("container.id", validUTF8(c.ID))
		}
		if c.Name != "" {
			m.PutStr("container.name", validUTF8(c.Name))
		}
	}
}
