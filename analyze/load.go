package analyze

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"math"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"

	"nsprof/capture"
	"nsprof/symbol"
)

// LoadOptions configures [Load]. The zero value is the default: names come
// from the capture's own __symbols__ bundle, JITMAP frames and embedded
// /proc/kallsyms.
type LoadOptions struct {
	// Symbolizers are tried, in order, after the capture's own for
	// addresses those do not name (for example a resolver reading the
	// host's files), from several goroutines at once. Default none.
	Symbolizers []Symbolizer
	// NoSymbolize gives every frame only its fallback name (see
	// [Profile.Symbolize]), for callers that symbolize later. Default
	// false.
	NoSymbolize bool
	// Addresses gives each address no symbolizer names a function of its
	// own ("FILE+0xOFFSET") instead of one per DSO ("[unknown in FILE]");
	// see [Profile.Addresses]. Default false.
	Addresses bool
	// NoHostFiles leaves out the last resort, a [HostSymbolizer] naming
	// what nothing else did from this machine's files (only the very
	// files that were mapped). Default false; it is left out anyway
	// for a capture whose recorder says its bundle is complete
	// ([capture.MetaSymbolsComplete]).
	NoHostFiles bool
	// NoAllocations leaves the ALLOCATION frames out of the samples
	// (Profile.Allocations still counts them), for a caller that shows
	// stack samples only: naming and matching the allocations of a
	// --memprof capture costs more than its stack samples. Default false.
	NoAllocations bool
	// Timeline builds [Profile.Timeline] in the same pass over the
	// capture: the marks, counters, logs, processes and frame counts
	// [LoadTimeline] reads. Frames of unknown types are then counted
	// there instead of stopping the load. Default false.
	Timeline bool
	// Progress, when set, is told how far loading has come: the stage
	// ("reading the capture", "reading symbols", "naming frames"), and
	// done of total bytes or frames (total 0 when unknown). It is
	// called often, from the loading goroutine, and should return
	// quickly (nsprof report and export show it on a terminal with
	// package internal/progress).
	Progress func(stage string, done, total int64)
	// FewerGCs loads a capture of less than smallCapture bytes with the
	// garbage collector running a quarter as often (GOGC 400), and puts
	// the process's setting back afterwards. The heap of such a capture
	// is a few megabytes, and collecting it as it grew from nothing was
	// a tenth of a small report's CPU (14 k samples: 12 % less CPU for
	// 2 MiB more at the peak). A larger capture's frames are read at GOGC
	// 400 too, the naming and what follows at the process's setting:
	// the reading makes little garbage (its tables are sized ahead), so
	// collecting its heap over and over as it grew was most of the
	// collector's work, while the peak comes later (a 15 s capture's
	// report 9 % faster, its peak unchanged).
	FewerGCs bool
}

// smallCapture is the largest capture FewerGCs applies to.
const smallCapture = 16 << 20

// kallsymsPath is where nsprof record and Sysprof 45+ embed the kernel's
// symbol table (gzip-compressed, at kallsymsPath+".gz").
const kallsymsPath = capture.KallsymsFile

// LoadFile loads the capture at path; see [Load]. It maps a regular file
// and decodes it in place (other files are read whole first), keeping
// copies only of the small embedded files it reads; the embedded kallsyms
// is read back from the file if a kernel address is left for it to name,
// and must then be unchanged. Errors name the path.
func LoadFile(name string, opts LoadOptions) (*Profile, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, unmap, info, err := capture.MapFile(f)
	if err != nil {
		return nil, err
	}
	if opts.FewerGCs && info != nil && info.Size() < smallCapture {
		defer raiseGCPercent(400)()
	}
	var p *Profile
	if data != nil {
		p, err = loadMapped(data, unmap, &sourceFile{path: name, info: info}, opts)
	} else {
		if data, err = io.ReadAll(f); err != nil {
			return nil, err
		}
		p, err = LoadBytes(data, opts)
	}
	if err != nil {
		err = fmt.Errorf("%s: %w", name, err)
	}
	return p, err
}

// Load reads a capture and builds its profile. When the header cannot be
// read it returns a nil Profile and the error. When reading stops at
// damage later, it returns the profile of the frames before the damage
// together with the error (a [*capture.FormatError] naming the offset);
// callers should report the error and may use the profile.
func Load(r io.Reader, opts LoadOptions) (*Profile, error) {
	cr, err := capture.NewReaderWithOptions(r, capture.ReaderOptions{AllowUnknown: opts.Timeline})
	if err != nil {
		return nil, err
	}
	return load(cr, false, nil, 0, nil, nil, opts)
}

// LoadBytes is [Load] over a capture held in memory, which it decodes in
// place. The profile may keep views of data (embedded files it reads only
// when first needed), so data must not change afterwards.
func LoadBytes(data []byte, opts LoadOptions) (*Profile, error) {
	return loadBytes(data, nil, opts)
}

// loadBytes is LoadBytes. With src set, data is src mapped and unmapped
// after loading, so the profile keeps no view of it.
func loadBytes(data []byte, src *sourceFile, opts LoadOptions) (*Profile, error) {
	cr, err := capture.NewBytesReader(data, capture.ReaderOptions{AllowUnknown: opts.Timeline})
	if err != nil {
		return nil, err
	}
	// The reading starts at once, the tables sized and the bundle
	// decoded once a walk ahead of it has counted and found them.
	sc := startScout(data, src != nil)
	defer sc.wait() // data is unmapped when loading returns
	var release func(upto int64)
	if src != nil {
		// A mapped file: the pages read are let go as the reading goes,
		// so that the file does not stay resident on top of the
		// profile made of it, and all of them once it is read (what
		// finish reads of it again comes back from the page cache).
		done := int64(0)
		release = func(upto int64) {
			switch {
			case upto == int64(len(data)):
				capture.DropMapped(data, 0, upto)
			case upto-done >= dropStep:
				capture.DropMapped(data, done, upto)
			default:
				return
			}
			done = upto
		}
	}
	return load(cr, src == nil, src, int64(len(data)), sc, release, opts)
}

// dropStep is how many bytes of a mapped capture are read between two
// releases of their pages. Both the scout and the reading hold up to
// that much: at 16 MiB, a 60 s capture's report peaked 4 MiB higher (152
// against 148 MiB, the same time).
const dropStep = 4 << 20

// sizes are counts of a capture's frames (see [countSamples]), so that
// the tables that grow with them are allocated once.
type sizes struct {
	// samples counts the SAMPLE frames (those before any damage), and
	// addrs counts the addresses they hold, and slots bounds those of
	// all frames with addresses, for [capture.DecodeLinesMax].
	// allocSamples counts the ALLOCATION frames of allocations (not
	// frees): samples of the profile too, unless
	// [LoadOptions.NoAllocations] (see [sizes.kept]).
	samples, addrs, slots, allocSamples int
	// procStacks counts the SAMPLE and ALLOCATION frames of each
	// process: the most stacks it can have.
	procStacks map[int32]int32
}

// kept returns the sizes of what loading keeps: the allocations as
// samples when allocations is set.
func (n sizes) kept(allocations bool) sizes {
	if allocations {
		n.samples += n.allocSamples
	}
	n.allocSamples = 0
	return n
}

// countSamples returns the sizes of the capture data, and the views of
// the chunks of its bundle files (see [startBundle]). With mapped set,
// data is a mapping whose pages it lets go as it goes (see
// [capture.DropMapped]).
func countSamples(data []byte, mapped bool) (sizes, *capture.Files) {
	n := sizes{procStacks: make(map[int32]int32)}
	fs := &capture.Files{}
	cr, err := capture.NewBytesReader(data, capture.ReaderOptions{})
	if err != nil {
		return n, fs
	}
	var (
		c    capture.FileChunk
		s    capture.Sample
		done int64
	)
	for frames := 1; ; frames++ {
		if off := cr.Offset(); mapped && frames&(1<<12-1) == 0 && off-done >= dropStep {
			capture.DropMapped(data, done, off)
			done = off
		}
		f, err := cr.NextRaw()
		if err != nil {
			return n, fs
		}
		switch f.Type {
		case capture.TypeSample:
			k, ok := f.SampleLen()
			if !ok {
				// Stopping at a damaged sample, as loading does.
				if f.DecodeSample(&s) != nil {
					return n, fs
				}
				k = len(s.Addrs)
			}
			n.samples++
			n.addrs += k
			n.procStacks[f.Head().PID]++
		case capture.TypeTrace:
			n.slots += len(f.Bytes) / 8
		case capture.TypeAllocation:
			n.slots += len(f.Bytes) / 8
			n.procStacks[f.Head().PID]++
			if size, k, ok := f.AllocationLen(); ok && (size > 0 || k > 0) {
				n.allocSamples++
			}
		case capture.TypeFileChunk:
			if f.DecodeFileChunk(&c) != nil {
				break
			}
			if isBundlePath(c.Path) {
				fs.AddView(&c)
			}
			// The stacks of off-CPU time and blocking calls have
			// addresses the lines file names too (8 bytes each, at
			// most, gzipped as much as it may inflate): counted only
			// from the SAMPLE frames, the lines of an off-CPU capture
			// of few CPU samples (nsprof agent --off-cpu at 19 Hz)
			// passed the bound, and those past it were dropped.
			switch c.Path {
			case capture.StacksFile:
				n.slots += len(c.Data) / 8
			case capture.StacksFile + ".gz":
				n.slots += int(min(capture.MaxInflated(c.Path, len(c.Data))/8, math.MaxInt32))
			}
		}
	}
}

// load builds the profile of the frames of cr. inPlace says the frames cr
// returns stay valid, so embedded files can be kept as views; else they
// are copied, but for the kallsyms, whose place in src is kept when src is
// set, and when src is set (cr reads src mapped, valid until load
// returns) the others are views too. size is the capture's, when known.
// sc, when set, walks the capture ahead of cr: its sizes then size the
// tables once it has ended, and its bundle is the one decoded. release,
// when set, is told every so often how far cr has read, and size once
// the reading has ended.
func load(cr *capture.Reader, inPlace bool, src *sourceFile, size int64, sc *scout, release func(upto int64), opts LoadOptions) (*Profile, error) {
	b := newBuilder(cr.Header())
	defer b.stopPipe() // when loading ends before finish
	b.unsized = sc != nil
	sized := sc == nil
	b.files.src = src
	// A mapped capture stays mapped until loading ends: what finish
	// reads of its files (all but the kallsyms, kept as an extent) is
	// read from views of it, and the views are dropped then.
	mode := chunkCopy
	if inPlace || src != nil {
		mode = chunkView
	}
	var (
		readErr error
		s       capture.Sample
		a       capture.Allocation
		c       capture.FileChunk
		tl      *timelineBuilder
		off     = cr.Offset()
	)
	if opts.Timeline {
		tl = newTimelineBuilder(cr.Header())
	}
	prog := opts.Progress
	if prog == nil {
		prog = func(string, int64, int64) {}
	}
	const stageRead = "reading the capture"
	prog(stageRead, 0, size)
	restoreGC := func() {}
	if opts.FewerGCs {
		restoreGC = raiseGCPercent(400)
	}
	for frames := 0; readErr == nil; frames++ {
		if frames&(1<<12-1) == 0 {
			prog(stageRead, cr.Offset(), size)
			if release != nil {
				release(cr.Offset())
			}
			if !sized && (frames == scoutAt || sc.ready()) {
				sc.wait()
				sized = true
				n := sc.n.kept(!opts.NoAllocations)
				b.reserve(n)
				b.startPipe(n.samples)
			}
		}
		f, err := cr.NextRaw()
		if err == io.EOF {
			break
		}
		if err != nil {
			readErr = err
			break
		}
		if f.Type == capture.TypeTrace || f.Type == capture.TypeAllocation {
			b.addrSlots += int64(len(f.Bytes) / 8) // at least their addresses
		}
		switch f.Type {
		case capture.TypeSample:
			if readErr = f.DecodeSample(&s); readErr == nil {
				b.addrSlots += int64(len(s.Addrs))
				b.time(s.Time)
				b.sample(&s)
				if tl != nil {
					off = tl.raw(&s, f.Type, cr.Offset(), off)
				}
			}
		case capture.TypeAllocation:
			if opts.NoAllocations && tl == nil {
				// Only counted, as before allocations were samples.
				b.p.Allocations++
				b.time(f.Head().Time)
				break
			}
			if readErr = f.DecodeAllocation(&a); readErr == nil {
				b.p.Allocations++
				b.time(a.Time)
				if !opts.NoAllocations {
					b.allocation(&a)
				}
				if tl != nil {
					off = tl.raw(&a, f.Type, cr.Offset(), off)
				}
			}
		case capture.TypeFileChunk:
			if readErr = f.DecodeFileChunk(&c); readErr == nil {
				if tl != nil {
					off = tl.raw(&c, f.Type, cr.Offset(), off)
				}
				b.time(c.Time)
				if wantFile(c.Path) {
					m := mode
					if src != nil && strings.TrimSuffix(c.Path, ".gz") == kallsymsPath {
						m = chunkExtent
					}
					b.files.add(c.Path, c.Data, f.Off+capture.FileChunkDataOffset, c.IsLast, m)
				}
			}
		case capture.TypeMetadata:
			var fr capture.Frame
			if fr, readErr = f.Decode(); readErr == nil {
				b.time(f.Head().Time)
				if tl != nil {
					off = tl.raw(fr, f.Type, cr.Offset(), off)
				}
				switch m := fr.(*capture.Metadata); m.ID {
				case capture.MetaEvent:
					b.event = m.Value
				case capture.MetaFrequency:
					b.freq = m.Value
				case capture.MetaHostname:
					b.p.Hostname = m.Value
				case capture.MetaSymbolsComplete:
					b.symbolsComplete = m.Value == "1"
				case capture.MetaMemprofSampleBytes:
					b.sampleBytes, _ = strconv.ParseInt(m.Value, 10, 64)
				case capture.MetaMemprofLost:
					b.p.memLost.has = true
					b.p.memLost.lost = parseCount(m.Value, b.p.memLost.lost)
				case capture.MetaMemprofSignalDropped:
					b.p.memLost.has = true
					b.p.memLost.signal = parseCount(m.Value, b.p.memLost.signal)
				default:
					b.offCPUMeta(m.ID, m.Value)
				}
			}
		default:
			var fr capture.Frame
			if fr, readErr = f.Decode(); readErr == nil {
				b.add(fr)
				if tl != nil {
					off = tl.raw(fr, f.Type, cr.Offset(), off)
				}
			}
		}
	}
	if release != nil {
		release(size)
	}
	if sc != nil {
		sc.wait()
		b.pre = sc.pre
		if readErr == nil {
			readErr = sc.err // the file shrank under the walk
		}
	}
	restoreGC()
	prog("reading symbols", 0, 0)
	b.namedLater = opts.NoSymbolize
	p := b.finish()
	if tl != nil {
		tl.finish()
		p.Timeline = tl.t
	}
	p.Addresses = opts.Addresses
	if opts.NoSymbolize {
		p.Symbolize(nil)
	} else {
		chain := append(Chain{p.CaptureSymbolizer()}, opts.Symbolizers...)
		if !opts.NoHostFiles && !(b.symbolsComplete && p.Bundle != nil) {
			chain = append(chain, NewHostSymbolizer(p, symbol.Loader{}))
		}
		p.symbolize(chain, func(done, total int) { prog("naming frames", int64(done), int64(total)) })
		// The frames hold what the lines said: the table, as large as
		// the frames, is not kept for the views.
		p.Lines = nil
		p.reserveInline()
		if p.Kallsyms != nil && p.Kallsyms.Err() != nil {
			err := p.Kallsyms.Err()
			if _, ok := errors.AsType[*capture.InflateError](err); ok {
				p.Warnings = append(p.Warnings, err.Error()) // names the file
			} else {
				p.Warnings = append(p.Warnings, fmt.Sprintf("%s: %v", kallsymsPath, err))
			}
		}
	}
	return p, readErr
}

// builder accumulates a profile while frames are read.
type builder struct {
	p *Profile
	// stacks and frames intern stacks and frames; the frames are kept
	// as keys until finish makes Profile.Frames of them, at their
	// number: a Frame is five times the size of its key. The stacks
	// are interned by process; lastStacks are those of lastStackPID.
	stacks       map[int32]map[stackKey]StackID
	lastStackPID int32
	lastStacks   map[stackKey]StackID
	// stackBound, once the capture's sizes are known, bounds the stacks
	// of each process, and stackRate is the share of samples read
	// before that which were of new stacks (see [builder.procStacks]).
	stackBound map[int32]int32
	stackRate  float64
	seeds      [2]maphash.Seed
	frames     map[int32]*procFrames
	// nFrames counts the frames in frames; frameKeys are their keys by
	// id, made from frames once they are all read (see keysOfFrames).
	nFrames   FrameID
	frameKeys []frameKey
	// kindFrames and kindMaps count the frames and the processes' maps
	// of them, by kind (kernel, user, caller: see newFrameMap).
	kindFrames, kindMaps [4]int
	// lastPID and lastFrames are the process of the stack interned last
	// and its frames.
	lastPID    int32
	lastFrames *procFrames
	// recent caches frames interned lately, by a hash of their key:
	// new stacks mostly repeat the frames of stacks interned before
	// them (their callers), and a lookup in a process's map of tens of
	// thousands of frames missed the processor's caches for each.
	recent *[recentFrames]recentFrame
	// recentStacks caches the stacks interned or found lately, by their
	// key, as recent does frames: samples come back to the stacks of
	// the last few milliseconds.
	recentStacks *[recentFrames]recentStack
	key          []byte
	files        embeddedFiles
	lostID       uint32
	maxTime      int64
	minTime      int64
	lastStack    StackID
	lastKey      []byte
	// nStacks counts the stacks numbered so far.
	nStacks StackID
	// addrSlots counts the addresses SAMPLE frames hold, and an upper
	// bound of those of TRACE and ALLOCATION frames: the most records a
	// LinesFile can hold (see capture.DecodeLinesMax).
	addrSlots int64
	// chunks hold the samples read so far: growing one slice of millions
	// would copy it over and over.
	chunks [][]Sample
	chunk  []Sample
	// nSamples counts the samples appended so far; allocs are the
	// ALLOCATION frames, matched once all are read; sampleBytes is the
	// allocation sampling interval of the recording.
	nSamples    int32
	allocs      allocEvents
	sampleBytes int64
	// event and freq are the sampling event and frequency the recording
	// says it used, for the CPU time of a sample.
	event, freq string
	// pre decodes the bundle files while frames are read, when set;
	// names gathers the processes' names over time (see [Process.NameAt]).
	names nameHistory
	// procFile is what it read of the process file, when it did.
	pre      *earlyBundle
	procFile *bundleFiles
	// linesPending decodes the lines file still, once pre has given
	// the symbols (see [builder.awaitLines]).
	linesPending *earlyBundle
	// symbolsComplete says the recording's symbol bundle names all it
	// could (capture.MetaSymbolsComplete): host files are not read.
	symbolsComplete bool
	// namedLater says the frames are named after loading
	// (LoadOptions.NoSymbolize), by symbolizers not known yet.
	namedLater bool
	// offStats are the off-CPU counts the recording wrote.
	offStats offCPUStats
	// blockStats are the blocking calls' counts and marks.
	blockStats blockingStats
	// callStats are the instrumented calls' counts.
	callStats callStats
	// pipe adds the frames of new stacks while frames are read, when
	// set; the frame tables above (frames, frameKeys, kindFrames,
	// kindMaps, lastPID, lastFrames, recent) and the profile's stack
	// tables are then its goroutine's.
	pipe *stackPipe
	// unsized says the tables were made before the capture's sizes
	// were known (see [scout]).
	unsized bool
}

const sampleChunk = 1 << 16

// firstChunk is the room for the first samples read before the capture's
// sizes are known (see [scout]).
const firstChunk = 1 << 12

// newBuilder returns a builder for a capture of header h, its tables
// empty: they grow as frames are read, or are sized by [builder.reserve]
// once a [scout] has counted the capture's frames.
func newBuilder(h capture.FileHeader) *builder {
	b := &builder{
		p: &Profile{
			Header:      h,
			procIndex:   make(map[int32]*Process),
			threadIndex: make(map[int32]*Thread),
			stackStart:  make([]int32, 1),
			JIT:         make(map[uint64]string),
		},
		stacks:       make(map[int32]map[stackKey]StackID),
		seeds:        [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()},
		frames:       make(map[int32]*procFrames),
		minTime:      math.MaxInt64,
		maxTime:      math.MinInt64,
		lastStack:    -1,
		recent:       new([recentFrames]recentFrame),
		recentStacks: new([recentFrames]recentStack),
	}
	for i := range b.recent {
		b.recent[i].fid = -1
		b.recentStacks[i].id = -1
	}
	return b
}

func (b *builder) process(pid int32) *Process {
	pr := b.p.procIndex[pid]
	if pr == nil {
		pr = &Process{PID: pid}
		b.p.procIndex[pid] = pr
	}
	return pr
}

// time widens the span of frame times to t, when t is set.
func (b *builder) time(t int64) {
	if t > 0 {
		b.minTime = min(b.minTime, t)
		b.maxTime = max(b.maxTime, t)
	}
}

// add adds a decoded frame other than a SAMPLE or a FILE_CHUNK.
func (b *builder) add(f capture.Frame) {
	b.time(f.Head().Time)
	switch f := f.(type) {
	case *capture.Map:
		pr := b.process(f.PID)
		pr.Maps = append(pr.Maps, Mapping{Start: f.Start, End: f.End, Offset: f.Offset, Inode: f.Inode, File: f.Filename, BuildID: f.BuildID, time: f.Time})
	case *capture.Process:
		b.process(f.PID).Cmdline = f.Cmdline
		b.names.frame(f)
	case *capture.Exit:
		if f.PID > 0 {
			b.process(f.PID) // one that forked, never exec'd, and exited
		}
	case *capture.Mark:
		b.blockingMark(f)
	case *capture.JITMap:
		for _, e := range f.Entries {
			b.p.JIT[e.Addr] = e.Name
		}
	case *capture.CounterDefine:
		for _, c := range f.Counters {
			if c.Category == capture.LostSamplesCategory && c.Name == capture.LostSamplesName {
				b.lostID = c.ID
				b.p.HasLost = true
				b.p.Lost = c.Value.Int64()
			}
		}
	case *capture.CounterSet:
		if b.lostID == 0 {
			return
		}
		for _, u := range f.Updates {
			if u.ID == b.lostID {
				b.p.Lost = max(b.p.Lost, u.Value.Int64())
			}
		}
	}
}

// wantFile reports whether the embedded file at p is one Load reads.
func wantFile(p string) bool {
	switch strings.TrimSuffix(p, ".gz") {
	case capture.SymbolsFile, capture.LinesFile, kallsymsPath, capture.ProcessFile, capture.OffCPUFile, capture.CallsFile, capture.StacksFile, capture.KernelNotesFile:
		return true
	}
	return isMountInfoFile(p)
}

// sample interns the sample's stack: the key is the pid and the raw
// addresses, so a stack seen before costs one map lookup and no
// allocation.
func (b *builder) sample(s *capture.Sample) {
	b.appendSample(Sample{Time: s.Time, PID: s.PID, TID: s.TID, Stack: b.stack(s.PID, s.Addrs, false), CPU: s.CPU})
}

// allocation adds an allocation as a sample, its stack interned with the
// samples' stacks, and keeps it (or a free: size 0 and no stack) for
// matching frees to allocations at the end. A frame of size 0 with a
// stack is an allocation of 0 bytes: malloc(0) returns a block that is
// freed later.
func (b *builder) allocation(a *capture.Allocation) {
	e := allocEvent{time: a.Time, addr: a.Addr, size: a.Size, pid: a.PID, tid: a.TID, sample: -1}
	if a.Size > 0 || len(a.Addrs) > 0 {
		e.sample = b.nSamples
		b.appendSample(Sample{Time: a.Time, PID: a.PID, TID: a.TID, Stack: b.stack(a.PID, a.Addrs, true), CPU: a.CPU})
	}
	b.allocs.add(e)
}

// appendSample appends s to the samples read so far.
func (b *builder) appendSample(s Sample) {
	if len(b.chunk) == cap(b.chunk) {
		if len(b.chunk) > 0 {
			b.chunks = append(b.chunks, b.chunk)
		}
		size := sampleChunk
		if b.unsized && len(b.chunks) == 0 && len(b.chunk) == 0 {
			size = firstChunk
		}
		b.chunk = make([]Sample, 0, size)
	}
	b.chunk = append(b.chunk, s)
	b.nSamples++
}

// finish completes the process and thread tables and loads the embedded
// files.
func (b *builder) finish() *Profile {
	p := b.p
	b.stopPipe()
	b.loadStacks()
	calls := b.callSamples()
	// No stack is interned after these: the tables that intern them go
	// before the frames and the bundle take their room.
	b.frameKeys = b.keysOfFrames()
	b.frames, b.lastFrames, b.stacks, b.lastStacks, b.recent, b.recentStacks = nil, nil, nil, nil, nil, nil
	if len(b.chunks) == 0 {
		p.Samples = b.chunk
	} else {
		n := len(b.chunk)
		for _, c := range b.chunks {
			n += len(c)
		}
		p.Samples = make([]Sample, 0, n)
		for _, c := range append(b.chunks, b.chunk) {
			p.Samples = append(p.Samples, c...)
		}
	}
	b.chunks, b.chunk = nil, nil
	// The symbols and lines first, for the room the frames need: their
	// warnings are told after the process file's, as ever.
	symWarnings := b.loadSymbols()
	p.Start, p.End = captureBounds(p.Header, b.minTime, b.maxTime)
	p.countOutOfRange()
	p.fillValues(&b.allocs, b.sampleBytes, cpuPeriod(b.event, b.freq), b.offCPUDurations(), b.blockingDurations())
	p.fillCalls(calls, b.callStats.timed)
	p.offStats, p.blockStats, p.callStats = b.offStats, b.blockStats, b.callStats
	p.Event = b.event
	if hz, err := strconv.ParseInt(b.freq, 10, 64); err == nil && hz > 0 {
		p.Frequency = hz
	}
	p.sampleBytes = b.sampleBytes
	b.allocs = allocEvents{}
	p.Totals = make([]int64, len(p.SampleTypes))
	var (
		pr *Process
		t  *Thread
	)
	for i := range p.Samples {
		s := &p.Samples[i]
		if pr == nil || pr.PID != s.PID {
			pr = b.process(s.PID)
		}
		switch {
		case s.Time <= 0:
			pr.firstSample = -1
		case pr.firstSample == 0, pr.firstSample > 0 && s.Time < pr.firstSample:
			pr.firstSample = s.Time
		}
		if t == nil || t.TID != s.TID {
			if t = p.threadIndex[s.TID]; t == nil {
				t = &Thread{TID: s.TID, PID: s.PID}
				p.threadIndex[s.TID] = t
			}
		}
		p.addValues(s, p.Totals)
		if p.Value(s, 0) > 0 {
			pr.Samples++
			t.Samples++
		}
	}
	// Another recorder's capture (no nsprof process file) has its
	// frame-pointer walks untrimmed; asked before the file is dropped.
	foreign := !b.files.has(capture.ProcessFile)
	b.loadProcessFile()
	b.labelForeign()
	p.Warnings = append(p.Warnings, symWarnings...)
	b.files.forget(capture.ProcessFile)
	var hists map[int32]*mapHistory
	for _, pr := range p.procIndex {
		var h *mapHistory
		pr.Maps, pr.replaced, h = resolveMaps(pr.Maps)
		if h != nil {
			if hists == nil {
				hists = make(map[int32]*mapHistory)
			}
			hists[pr.PID] = h
		}
		if pr.Comm == "" {
			pr.Comm = commOf(pr.Cmdline)
		}
		p.Processes = append(p.Processes, pr)
	}
	p.nameRootMappings()
	b.names.apply(p.procIndex)
	b.names = nameHistory{}
	slices.SortFunc(p.Processes, func(x, y *Process) int { return int(x.PID) - int(y.PID) })
	for _, t := range p.threadIndex {
		p.Threads = append(p.Threads, t)
	}
	slices.SortFunc(p.Threads, func(x, y *Thread) int { return int(x.TID) - int(y.TID) })
	// The frames as read are one per process and address until those
	// at the same code are merged.
	b.frameKeys = p.splitImages(hists, b.frameKeys)
	p.trimJunk(b.frameKeys, foreign)
	rep := p.sameCode(b.frameKeys)
	// The lines are needed from here on: their decoding ran beside the
	// work above (on a small capture it was the last of the bundle's).
	b.awaitLines()
	p.mergeSameCode(b.frameKeys, rep, foreign || b.namedLater || !b.symbolsComplete || p.Bundle == nil)
	b.frameKeys = nil
	// Only the kallsyms is read later (see loadSymbols): the others may
	// be views of a mapping that ends with loading.
	b.files.forgetAllBut(kallsymsPath)
	return p
}

// commOf returns the base name of the command line's first word.
func commOf(cmdline string) string {
	w, _, _ := strings.Cut(cmdline, " ")
	return path.Base(w)
}

// loadProcessFile applies nsprof's process file: comm, namespace pids and
// container labels.
func (b *builder) loadProcessFile() {
	var (
		ps  []capture.ProcessInfo
		ts  []capture.ThreadInfo
		err error
	)
	if d := b.procFile; d != nil {
		ps, ts, err = d.procs, d.threads, d.procErr
		b.procFile = nil
	} else {
		var fs *capture.Files
		if fs, err = b.files.capture(capture.ProcessFile); err == nil {
			ps, ts, err = capture.ReadProcessFile(fs)
		}
	}
	if err != nil {
		b.p.Warnings = append(b.p.Warnings, fmt.Sprintf("process info: %v", err))
	}
	for i := range ps {
		pi := &ps[i]
		b.names.info(pi)
		pr := b.process(int32(pi.PID))
		if pi.Comm != "" {
			pr.Comm = pi.Comm
		}
		if n := len(pi.NSpid); n > 1 {
			pr.NSPID = int32(pi.NSpid[n-1])
		}
		if c := pi.Container; c != nil {
			pr.Container = &Container{Kind: c.Kind, ID: c.ID, Name: c.Name, AppID: c.AppID, Rootless: c.Rootless, Root: c.Root}
		}
		if pr.Cmdline == "" && len(pi.Cmdline) > 0 {
			pr.Cmdline = strings.Join(pi.Cmdline, " ")
		}
	}
	for _, ti := range ts {
		t := b.p.threadIndex[int32(ti.TID)]
		if t == nil {
			t = &Thread{TID: int32(ti.TID), PID: int32(ti.PID)}
			b.p.threadIndex[t.TID] = t
		}
		if n := len(ti.NSpid); n > 1 {
			t.NSTID = int32(ti.NSpid[n-1])
		}
	}
	// A process's main thread has the process's namespace id.
	for _, t := range b.p.threadIndex {
		if pr := b.p.procIndex[t.PID]; pr != nil && t.TID == t.PID && t.NSTID == 0 {
			t.NSTID = pr.NSPID
		}
	}
}

// loadSymbols decodes the __symbols__ bundle and the source lines, or
// takes the bundle from the goroutine that decoded it while the frames
// were read (the lines then come by [builder.awaitLines]), and prepares
// the embedded kallsyms. It returns the warnings about them.
func (b *builder) loadSymbols() []string {
	var d *bundleFiles
	if b.pre != nil {
		d, b.linesPending, b.pre = b.pre.wait(), b.pre, nil
	} else {
		d = decodeBundle(&b.files.fs, int(b.addrSlots))
	}
	b.p.Bundle, b.p.Lines = d.table, d.lines
	if d.procsRead {
		b.procFile = d
	}
	warnings := d.warnings
	b.files.forget(capture.SymbolsFile, capture.LinesFile)
	if data, err := b.files.lookup(capture.KernelNotesFile); err == nil {
		// The notes are 4-byte aligned in the recording machine's
		// byte order: little-endian on the machines nsprof records.
		if id := symbol.FindBuildIDNote(data, binary.LittleEndian, 4); id != nil {
			b.p.KernelBuildID = hex.EncodeToString(id)
		} else {
			warnings = append(warnings, capture.KernelNotesFile+": no GNU build-id note")
		}
		b.files.forget(capture.KernelNotesFile)
	}
	// The kallsyms text is joined and inflated only when a kernel address
	// is left that the bundle does not name.
	// The closure holds a copy of the files, not the builder, which
	// is let go with what it still refers to.
	if files := new(b.files); files.has(kallsymsPath) {
		b.p.Kallsyms = newLazyKallsyms(func() ([]byte, error) {
			return files.lookup(kallsymsPath)
		})
	}
	return warnings
}

// awaitLines takes the lines file from the goroutine decoding it, when
// one is (see [earlyBundle]), and tells its warnings after the others
// about the bundle.
func (b *builder) awaitLines() {
	if b.linesPending == nil {
		return
	}
	d := b.linesPending.waitLines()
	b.linesPending = nil
	b.p.Lines = d.lines
	b.p.Warnings = append(b.p.Warnings, d.warnings...)
}

// raw adds frame fr of stored type typ to the timeline, which ends at
// offset end in the file where the frame before ended at off, and
// returns end.
func (b *timelineBuilder) raw(fr capture.Frame, typ capture.FrameType, end, off int64) int64 {
	if u, ok := fr.(*capture.Unknown); ok {
		typ = u.RawType
	}
	b.frame(fr, typ, end-off)
	return end
}
