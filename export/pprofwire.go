package export

import (
	"bufio"
	"io"
	"path"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/klauspost/compress/gzip"
	"google.golang.org/protobuf/encoding/protowire"

	"nsprof/analyze"
)

// Field numbers of perftools.profiles.Profile (google/pprof's
// proto/profile.proto) and of the messages it holds.
const (
	profSampleType        = 1
	profSample            = 2
	profMapping           = 3
	profLocation          = 4
	profFunction          = 5
	profStringTable       = 6
	profTimeNanos         = 9
	profDurationNanos     = 10
	profPeriodType        = 11
	profPeriod            = 12
	profComment           = 13
	profDefaultSampleType = 14

	valueTypeType = 1
	valueTypeUnit = 2

	sampleLocationID = 1
	sampleValue      = 2
	sampleLabel      = 3

	labelKey = 1
	labelStr = 2
	labelNum = 3

	mappingID             = 1
	mappingStart          = 2
	mappingLimit          = 3
	mappingOffset         = 4
	mappingFilename       = 5
	mappingBuildID        = 6
	mappingHasFunctions   = 7
	mappingHasFilenames   = 8
	mappingHasLineNumbers = 9

	locationID        = 1
	locationMappingID = 2
	locationAddress   = 3
	locationLine      = 4

	lineFunctionID = 1
	lineLine       = 2

	functionID         = 1
	functionName       = 2
	functionSystemName = 3
	functionFilename   = 4
)

// wireWriter encodes the pprof profile [Pprof] describes straight from
// the view. It is written for speed: building a profile.Profile of a
// large capture (a Sample, a Location slice and label maps per sample, a
// Location and a Line slice per address) and then having google/pprof's
// encoder index, check and serialize it took two thirds of `nsprof export
// --format pprof` and twice the memory of loading the capture. The
// encoding is protobuf's wire format by google.golang.org/protobuf's
// protowire; tests parse what it writes with google/pprof's parser and
// compare the profile with one built with google/pprof's types.
type wireWriter struct {
	v    *analyze.View
	cols []int

	strs    map[string]int64
	strList []string

	locOf []int32 // location index + 1, by FrameID
	// sameLoc holds, by FrameID, the first frame of the same location
	// (see [locKey]); frameMaps each frame's process mapping (nil for
	// none and for the kernel's).
	sameLoc   []int32
	frameMaps []*analyze.Mapping
	locs      []wireLoc
	lines     []wireLine

	funcOf  []int32 // function index + 1, by FuncID
	inlined map[[2]string]int32
	funcs   []wireFunc

	mappings map[mappingKey]int32
	// byMapping holds the index + 1 of each process mapping's: the
	// mappings of many processes have the same key, which hashing for
	// every frame took its file name and build-id.
	byMapping map[*analyze.Mapping]int32
	maps      []wireMapping
	kernel    int32 // mapping index + 1

	samples []wireSample
	values  []int64
	// located is how far the location pass has come (see [progress]);
	// done ends when it has finished.
	located progress
	done    sync.WaitGroup
	// labels are the encoded labels of the samples, one entry per
	// thread (and process: tids of -1 are shared; and program, in a
	// process that exec'd), indexed by threadLabels.
	labels       [][]byte
	threadLabels map[threadKey]wireLabels
}

type wireLoc struct {
	mapping    int32 // index + 1, or 0
	addr       uint64
	start, end int32 // of lines
}

type wireLine struct {
	fn   int32 // index
	line int64
}

type wireFunc struct {
	name, file string
}

type wireMapping struct {
	key                  mappingKey
	hasFiles, hasNumbers bool
}

type wireSample struct {
	stack  analyze.StackID
	tid    int32
	labels int32 // index in labels
	first  int32 // the index in the view of its first sample
}

// progress is how many of the view's samples a goroutine has passed,
// published every few thousand: what it wrote before is seen by the
// goroutines that read it since.
type progress struct {
	n    atomic.Int64
	tick chan struct{} // a send after each step; closed at the end
}

// set records that n samples are passed.
func (p *progress) set(n int) {
	p.n.Store(int64(n))
	select {
	case p.tick <- struct{}{}:
	default:
	}
}

// end records that all are, for good.
func (p *progress) end(n int) {
	p.n.Store(int64(n))
	close(p.tick)
}

// wait returns once more than i samples are passed.
func (p *progress) wait(i int) {
	for p.n.Load() <= int64(i) {
		<-p.tick
	}
}

type wireLabels struct {
	pid, index int32
}

// threadKey is a thread whose samples share labels: its tid and, in a
// process that exec'd, the index + 1 of the program it ran.
type threadKey struct {
	tid, name int32
}

// writePprof writes the pprof profile of v, gzipped by klauspost/compress
// at its level 2: as small as compress/gzip's fastest level (2.07 MB for
// the 6.8 MB profile of a 120 k-sample capture) in two thirds of its time
// (48 ms against 74). profile.Write's default level took longer than
// building the profile on a large capture (2.7 s of 7.9 s for 800k
// locations), for a file about a fifth smaller.
func writePprof(w io.Writer, v *analyze.View, o Options) error {
	o.setDefaults()
	ww := newWireWriter(v)
	ww.collect()
	defer ww.done.Wait()
	gz, err := gzip.NewWriterLevel(w, 2)
	if err != nil {
		return err
	}
	// Compressing takes about as long as encoding: it is done on a
	// goroutine of its own, a buffer behind.
	aw := newAsyncWriter(gz)
	bw := bufio.NewWriterSize(aw, 1<<16)
	err = ww.write(bw, o)
	if err == nil {
		err = bw.Flush()
	}
	if cerr := aw.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	return gz.Close()
}

// asyncWriter writes to w from a goroutine of its own: Write hands over a
// copy of its bytes and returns, unless two writes are still pending.
type asyncWriter struct {
	ch   chan []byte
	free chan []byte
	done chan error
}

func newAsyncWriter(w io.Writer) *asyncWriter {
	a := &asyncWriter{ch: make(chan []byte, 2), free: make(chan []byte, 3), done: make(chan error, 1)}
	go func() {
		var err error
		for b := range a.ch {
			if err == nil {
				_, err = w.Write(b)
			}
			select {
			case a.free <- b[:0]:
			default:
			}
		}
		a.done <- err
	}()
	return a
}

// Write queues a copy of p. An error of an earlier write is returned by
// Close.
func (a *asyncWriter) Write(p []byte) (int, error) {
	var b []byte
	select {
	case b = <-a.free:
	default:
	}
	a.ch <- append(b, p...)
	return len(p), nil
}

// Close waits for the queued writes and returns the first error.
func (a *asyncWriter) Close() error {
	close(a.ch)
	return <-a.done
}

func newWireWriter(v *analyze.View) *wireWriter {
	return &wireWriter{
		v:            v,
		cols:         pprofColumns(v),
		strs:         newStrings(len(v.Funcs)),
		strList:      []string{""},
		locOf:        make([]int32, len(v.Frames)),
		byMapping:    make(map[*analyze.Mapping]int32),
		funcOf:       make([]int32, len(v.Funcs)),
		inlined:      make(map[[2]string]int32),
		mappings:     make(map[mappingKey]int32),
		threadLabels: make(map[threadKey]wireLabels),
	}
}

// newStrings returns a string table holding "" only, sized for the
// names of funcs functions (and a few files and labels), so that it is
// not rehashed as it grows to them (5.7 k strings for a 2 s capture of
// a build).
func newStrings(funcs int) map[string]int64 {
	m := make(map[string]int64, funcs+funcs/4+64)
	m[""] = 0
	return m
}

// str returns the index of s in the string table, adding it when new.
func (w *wireWriter) str(s string) int64 {
	if i, ok := w.strs[s]; ok {
		return i
	}
	i := int64(len(w.strList))
	w.strs[s] = i
	w.strList = append(w.strList, s)
	return i
}

// collect gathers the samples, one per distinct (stack, thread) with
// their values summed, and starts finding the locations, functions and
// mappings they reach, numbered in the order they are first reached, on
// a goroutine of their own: one loop doing both took a quarter of an
// export of 120 k samples, all of it on one CPU. The two share nothing
// but the view they read. The samples are written while the locations
// are found, each once the locations of its stack are (see
// [wireWriter.write]); w.done ends when they all are.
func (w *wireWriter) collect() {
	var locs int
	w.sameLoc, w.frameMaps, locs = sameLocations(w.v)
	// The tables the location pass fills, sized for every location of
	// the view (a line a location, but for inlined calls): grown from
	// empty, on a 2 s capture of a build (15 k frames, 14.5 k
	// locations, 6 k functions) their copies made the pass 7-8 ms
	// instead of 10, and 2.5 of the export's 9.1 MB of garbage.
	w.locs = make([]wireLoc, 0, locs)
	w.lines = make([]wireLine, 0, locs+locs/4)
	w.funcs = make([]wireFunc, 0, len(w.v.Funcs))
	w.located.tick = make(chan struct{}, 1)
	w.done.Go(w.locate)
	w.collectSamples()
}

// locate numbers the locations of the view's stacks in the order of
// their first samples, frame by frame.
func (w *wireWriter) locate() {
	seen := make([]bool, w.v.NumStacks())
	for i := range w.v.Samples {
		if i&(1<<12-1) == 0 {
			w.located.set(i)
		}
		st := w.v.Samples[i].Stack
		if seen[st] {
			continue
		}
		seen[st] = true
		for _, fr := range w.v.Stack(st) {
			w.location(fr)
		}
	}
	w.located.end(len(w.v.Samples))
}

// collectSamples gathers the samples, one per distinct (stack, thread),
// with their values summed.
func (w *wireWriter) collectSamples() {
	type sampleKey struct {
		stack analyze.StackID
		tid   int32
		name  int32 // the program's index + 1 in a process that exec'd
	}
	// A process that exec'd during the capture has samples of each
	// program it ran, labelled with that program's comm (see
	// analyze.Process.NameAt): those are told apart by name too.
	renamed := make(map[int32]*analyze.Process)
	for _, pr := range w.v.Processes {
		if pr.Renamed() {
			renamed[pr.PID] = pr
		}
	}
	lastPID, lastRenamed := int32(-1), (*analyze.Process)(nil)
	// The sample of each stack's first thread is found by the stack;
	// the other threads' (fewer) in a map: a lookup in a map of half
	// a million samples missed the caches for every one.
	type firstOf struct{ tid, j int32 }
	first := make([]firstOf, w.v.NumStacks())
	for i := range first {
		first[i].j = -1
	}
	index := make(map[sampleKey]int32)
	n := len(w.cols)
	// A sample a stack at least: grown from empty, the copies were most
	// of collecting a 60 s capture's 263 k.
	w.samples = slices.Grow(w.samples, len(first))
	w.values = slices.Grow(w.values, len(first)*n)
	for i := range w.v.Samples {
		s := &w.v.Samples[i]
		f := &first[s.Stack]
		var name int32
		if len(renamed) > 0 {
			if s.PID != lastPID { // samples of a process come in runs
				lastPID, lastRenamed = s.PID, renamed[s.PID]
			}
			if lastRenamed != nil {
				name = int32(lastRenamed.NameIndex(s.Time)) + 1
			}
		}
		j, ok := f.j, f.j >= 0 && f.tid == s.TID && name == 0
		if !ok && (f.j >= 0 || name != 0) {
			j, ok = index[sampleKey{s.Stack, s.TID, name}]
		}
		if !ok {
			j = int32(len(w.samples))
			if f.j < 0 && name == 0 {
				f.tid, f.j = s.TID, j
			} else {
				index[sampleKey{s.Stack, s.TID, name}] = j
			}
			tk := threadKey{s.TID, name}
			l, ok := w.threadLabels[tk]
			if !ok || l.pid != s.PID {
				l = wireLabels{s.PID, int32(len(w.labels))}
				w.labels = append(w.labels, w.encodeLabels(s))
				w.threadLabels[tk] = l
			}
			w.samples = append(w.samples, wireSample{s.Stack, s.TID, l.index, int32(i)})
			w.values = append(w.values, make([]int64, n)...)
		}
		addValues(w.v, w.values[int(j)*n:int(j+1)*n], s, w.cols)
	}
}

// encodeLabels encodes the labels of the samples of s's thread: pid and tid,
// and comm, nspid and container as [processLabels] gives them.
func (w *wireWriter) encodeLabels(s *analyze.Sample) []byte {
	var b []byte
	num := func(k string, v int64) {
		var l []byte
		l = protowire.AppendTag(l, labelKey, protowire.VarintType)
		l = protowire.AppendVarint(l, uint64(w.str(k)))
		l = appendInt(l, labelNum, v)
		b = appendBytes(b, sampleLabel, l)
	}
	str := func(k, v string) {
		var l []byte
		l = protowire.AppendTag(l, labelKey, protowire.VarintType)
		l = protowire.AppendVarint(l, uint64(w.str(k)))
		l = appendInt(l, labelStr, w.str(v))
		b = appendBytes(b, sampleLabel, l)
	}
	num("pid", int64(s.PID))
	num("tid", int64(s.TID))
	if pr := w.v.Process(s.PID); pr != nil {
		if comm, _ := pr.NameAt(s.Time); comm != "" {
			str("comm", comm)
		}
		if pr.NSPID != 0 {
			num("nspid", int64(pr.NSPID))
		}
		if pr.Container != nil {
			str("container", pr.Container.Label())
		}
	}
	return b
}

// location returns the index + 1 of the location of frame id, adding it
// (and its mapping and functions, in that order) when new.
func (w *wireWriter) location(id analyze.FrameID) int32 {
	if l := w.locOf[id]; l != 0 {
		return l
	}
	// A location is made from the first frame of it reached, and
	// recorded under the first frame of it in frame order too.
	same := w.sameLoc[id]
	if i := w.locOf[same]; i != 0 {
		w.locOf[id] = i
		return i
	}
	fr := &w.v.Frames[id]
	l := wireLoc{mapping: w.mapping(fr, w.frameMaps[id]), addr: fr.Addr, start: int32(len(w.lines))}
	for _, in := range fr.Loc.Inline {
		w.lines = append(w.lines, wireLine{w.inlineFunction(in), int64(in.Line)})
	}
	w.lines = append(w.lines, wireLine{w.function(fr), int64(fr.Loc.Line)})
	l.end = int32(len(w.lines))
	w.locs = append(w.locs, l)
	i := int32(len(w.locs))
	w.locOf[id] = i
	w.locOf[same] = i
	return i
}

// function returns the index of the function of fr, adding it when new;
// a function first seen without a source file takes the first one a
// later location gives.
func (w *wireWriter) function(fr *analyze.Frame) int32 {
	if i := w.funcOf[fr.Func]; i != 0 {
		if f := &w.funcs[i-1]; f.file == "" && fr.Loc.File != "" {
			f.file = fr.Loc.File
		}
		return i - 1
	}
	w.funcs = append(w.funcs, wireFunc{w.v.Funcs[fr.Func].Name, fr.Loc.File})
	w.funcOf[fr.Func] = int32(len(w.funcs))
	return int32(len(w.funcs) - 1)
}

// inlineFunction returns the index of the function of an inlined call.
func (w *wireWriter) inlineFunction(in analyze.Location) int32 {
	k := [2]string{in.Function, in.File}
	if i, ok := w.inlined[k]; ok {
		return i
	}
	i := int32(len(w.funcs))
	w.funcs = append(w.funcs, wireFunc{in.Function, in.File})
	w.inlined[k] = i
	return i
}

// mapping returns the index + 1 of the mapping of a frame: m, the
// process's mapping holding it, or the kernel's (one for all kernel
// addresses, widened to span them), or 0 for none (JIT code, unmapped
// addresses: m nil). A mapping has file names and line numbers when a
// frame in it has them.
func (w *wireWriter) mapping(fr *analyze.Frame, m *analyze.Mapping) int32 {
	if fr.Kernel {
		if w.kernel == 0 {
			w.kernel = w.newMapping(mappingKey{start: fr.Addr, end: fr.Addr + 1, file: kernelMapping, buildID: w.v.KernelBuildID})
		}
		k := &w.maps[w.kernel-1].key
		k.start = min(k.start, fr.Addr)
		k.end = max(k.end, fr.Addr+1)
		return w.kernel
	}
	if m == nil {
		return 0
	}
	i, ok := w.byMapping[m]
	if !ok {
		k := mappingKey{m.Start, m.End, m.Offset, m.File, m.BuildID}
		if i, ok = w.mappings[k]; !ok {
			i = w.newMapping(k)
			w.mappings[k] = i
		}
		w.byMapping[m] = i
	}
	wm := &w.maps[i-1]
	wm.hasFiles = wm.hasFiles || fr.Loc.File != ""
	wm.hasNumbers = wm.hasNumbers || fr.Loc.Line > 0
	return i
}

func (w *wireWriter) newMapping(k mappingKey) int32 {
	w.maps = append(w.maps, wireMapping{key: k})
	return int32(len(w.maps))
}

// mappingIDs returns the id of each mapping: in order of first use, but
// for the main executable's, moved first, where pprof looks for it
// ("File:" in its reports): the mapping of the file the most sampled
// process runs, by command line or comm.
func (w *wireWriter) mappingIDs() []uint64 {
	ids := make([]uint64, len(w.maps))
	for i := range ids {
		ids[i] = uint64(i + 1)
	}
	var top *analyze.Process
	for _, pr := range w.v.Processes {
		if top == nil || pr.Samples > top.Samples {
			top = pr
		}
	}
	if top == nil {
		return ids
	}
	exe, _, _ := strings.Cut(top.Cmdline, " ")
	for i, m := range w.maps {
		if f := m.key.file; f != "" && (f == exe || path.Base(f) == top.Comm) {
			for j := range i {
				ids[j] = uint64(j + 2)
			}
			ids[i] = 1
			break
		}
	}
	return ids
}

// write encodes the profile into out.
func (w *wireWriter) write(out io.Writer, o Options) error {
	v := w.v
	var b, m []byte
	flush := func() error {
		_, err := out.Write(b)
		b = b[:0]
		return err
	}
	// The header, as [Pprof] describes it.
	h := newPprofHeader(v, w.cols)
	periodN := h.periodN
	if h.cpu && len(w.samples) > 0 {
		periodN = h.cpuPeriod(w.values[:len(w.cols)])
	}
	valueType := func(field protowire.Number, t analyze.ValueType) {
		m = m[:0]
		m = appendInt(m, valueTypeType, w.str(t.Type))
		m = appendInt(m, valueTypeUnit, w.str(t.Unit))
		b = appendBytes(b, field, m)
	}
	for _, t := range h.types {
		valueType(profSampleType, t)
	}
	if t, err := time.Parse(time.RFC3339Nano, v.Header.CaptureTime); err == nil {
		b = appendInt(b, profTimeNanos, t.UnixNano())
	}
	b = appendInt(b, profDurationNanos, v.Duration())
	valueType(profPeriodType, h.period)
	b = appendInt(b, profPeriod, periodN)
	b = appendInt(b, profComment, w.str(o.Title))
	b = appendInt(b, profDefaultSampleType, w.str(h.types[slices.Index(w.cols, v.Selected())].Type))

	// Samples, a few thousand at a time.
	n := len(w.cols)
	var ids []uint64
	for i, s := range w.samples {
		w.located.wait(int(s.first))
		m = m[:0]
		ids = ids[:0]
		for _, fr := range v.Stack(s.stack) {
			ids = append(ids, uint64(w.locOf[fr]))
		}
		m = appendPacked(m, sampleLocationID, ids)
		ids = ids[:0]
		for _, x := range w.values[i*n : (i+1)*n] {
			ids = append(ids, uint64(x))
		}
		m = appendPacked(m, sampleValue, ids)
		m = append(m, w.labels[s.labels]...)
		b = appendBytes(b, profSample, m)
		if len(b) >= 1<<16 {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	w.done.Wait()
	mapIDs := w.mappingIDs()
	order := make([]int, len(w.maps))
	for i, id := range mapIDs {
		order[id-1] = i
	}
	for _, i := range order {
		mp := &w.maps[i]
		m = m[:0]
		m = appendInt(m, mappingID, int64(mapIDs[i]))
		m = appendInt(m, mappingStart, int64(mp.key.start))
		m = appendInt(m, mappingLimit, int64(mp.key.end))
		m = appendInt(m, mappingOffset, int64(mp.key.offset))
		m = appendInt(m, mappingFilename, w.str(mp.key.file))
		m = appendInt(m, mappingBuildID, w.str(mp.key.buildID))
		m = appendBool(m, mappingHasFunctions, true)
		m = appendBool(m, mappingHasFilenames, mp.hasFiles)
		m = appendBool(m, mappingHasLineNumbers, mp.hasNumbers)
		b = appendBytes(b, profMapping, m)
	}
	var ln []byte
	for i, l := range w.locs {
		m = m[:0]
		m = appendInt(m, locationID, int64(i+1))
		if l.mapping != 0 {
			m = appendInt(m, locationMappingID, int64(mapIDs[l.mapping-1]))
		}
		m = appendInt(m, locationAddress, int64(l.addr))
		for _, x := range w.lines[l.start:l.end] {
			ln = ln[:0]
			ln = appendInt(ln, lineFunctionID, int64(x.fn+1))
			ln = appendInt(ln, lineLine, x.line)
			m = appendBytes(m, locationLine, ln)
		}
		b = appendBytes(b, profLocation, m)
		if len(b) >= 1<<16 {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	for i, f := range w.funcs {
		m = m[:0]
		name := w.str(f.name)
		m = appendInt(m, functionID, int64(i+1))
		m = appendInt(m, functionName, name)
		m = appendInt(m, functionSystemName, name)
		m = appendInt(m, functionFilename, w.str(f.file))
		b = appendBytes(b, profFunction, m)
		if len(b) >= 1<<16 {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	// The string table last: every string is in it by now.
	for _, s := range w.strList {
		b = protowire.AppendTag(b, profStringTable, protowire.BytesType)
		b = protowire.AppendString(b, s)
		if len(b) >= 1<<16 {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	return flush()
}

// appendInt appends field f of value x, unless x is 0 (protobuf's
// default, as google/pprof leaves it out too).
func appendInt(b []byte, f protowire.Number, x int64) []byte {
	if x == 0 {
		return b
	}
	b = protowire.AppendTag(b, f, protowire.VarintType)
	return protowire.AppendVarint(b, uint64(x))
}

// appendBool appends field f when x is true.
func appendBool(b []byte, f protowire.Number, x bool) []byte {
	if !x {
		return b
	}
	b = protowire.AppendTag(b, f, protowire.VarintType)
	return protowire.AppendVarint(b, 1)
}

// appendBytes appends the embedded message (or bytes) m as field f.
func appendBytes(b []byte, f protowire.Number, m []byte) []byte {
	b = protowire.AppendTag(b, f, protowire.BytesType)
	return protowire.AppendBytes(b, m)
}

// appendPacked appends xs as the packed repeated field f.
func appendPacked(b []byte, f protowire.Number, xs []uint64) []byte {
	if len(xs) == 0 {
		return b
	}
	size := 0
	for _, x := range xs {
		size += protowire.SizeVarint(x)
	}
	b = protowire.AppendTag(b, f, protowire.BytesType)
	b = protowire.AppendVarint(b, uint64(size))
	for _, x := range xs {
		b = protowire.AppendVarint(b, x)
	}
	return b
}
