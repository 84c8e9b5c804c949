package analyze

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"os"
	"path"
	"slices"
	"strings"

	"nsprof/capture"
	"nsprof/record"
	"nsprof/symbol"
)

// LoadOptions configures [Load]. The zero value is the default: names come
// from the capture's own __symbols__ bundle, JITMAP frames and embedded
// /proc/kallsyms.
type LoadOptions struct {
	// Symbolizers are tried, in order, after the capture's own for
	// addresses those do not name (for example a resolver reading the
	// host's files). Default none.
	Symbolizers []Symbolizer
	// NoSymbolize gives every frame only its fallback name (see
	// [Profile.Symbolize]), for callers that symbolize later. Default
	// false.
	NoSymbolize bool
	// NoHostFiles leaves out the last resort, a [HostSymbolizer] naming
	// what nothing else did from this machine's files (only the very
	// files that were mapped). Default false.
	NoHostFiles bool
}

// kallsymsPath is where nsprof record and Sysprof 45+ embed the kernel's
// symbol table (gzip-compressed, at kallsymsPath+".gz").
const kallsymsPath = "/proc/kallsyms"

// LoadFile loads the capture at path; see [Load]. Errors name the path.
func LoadFile(name string, opts LoadOptions) (*Profile, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	p, err := Load(f, opts)
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
	cr, err := capture.NewReader(r)
	if err != nil {
		return nil, err
	}
	b := newBuilder(cr.Header())
	var readErr error
	for {
		f, err := cr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			readErr = err
			break
		}
		b.add(f)
	}
	p := b.finish()
	if opts.NoSymbolize {
		p.Symbolize(nil)
	} else {
		chain := append(Chain{p.CaptureSymbolizer()}, opts.Symbolizers...)
		if !opts.NoHostFiles {
			chain = append(chain, NewHostSymbolizer(p, symbol.Loader{}))
		}
		p.Symbolize(chain)
		if p.Kallsyms != nil && p.Kallsyms.Err() != nil {
			p.Warnings = append(p.Warnings, fmt.Sprintf("%s: %v", kallsymsPath, p.Kallsyms.Err()))
		}
	}
	return p, readErr
}

type frameKey struct {
	pid    int32
	kernel bool
	addr   uint64
}

// builder accumulates a profile while frames are read.
type builder struct {
	p         *Profile
	stacks    map[string]StackID
	frames    map[frameKey]FrameID
	key       []byte
	files     capture.Files
	lostID    uint32
	maxTime   int64
	minTime   int64
	lastStack StackID
	lastKey   []byte
	// chunks hold the samples read so far: growing one slice of millions
	// would copy it over and over.
	chunks [][]Sample
	chunk  []Sample
}

const sampleChunk = 1 << 16

func newBuilder(h capture.FileHeader) *builder {
	return &builder{
		p: &Profile{
			Header:      h,
			procIndex:   make(map[int32]*Process),
			threadIndex: make(map[int32]*Thread),
			stackStart:  []int32{0},
			JIT:         make(map[uint64]string),
		},
		stacks:    make(map[string]StackID),
		frames:    make(map[frameKey]FrameID),
		minTime:   math.MaxInt64,
		maxTime:   math.MinInt64,
		lastStack: -1,
	}
}

func (b *builder) process(pid int32) *Process {
	pr := b.p.procIndex[pid]
	if pr == nil {
		pr = &Process{PID: pid}
		b.p.procIndex[pid] = pr
	}
	return pr
}

func (b *builder) add(f capture.Frame) {
	h := f.Head()
	if h.Time > 0 {
		b.minTime = min(b.minTime, h.Time)
		b.maxTime = max(b.maxTime, h.Time)
	}
	switch f := f.(type) {
	case *capture.Sample:
		b.sample(f)
	case *capture.Map:
		pr := b.process(f.PID)
		pr.Maps = append(pr.Maps, Mapping{Start: f.Start, End: f.End, Offset: f.Offset, Inode: f.Inode, File: f.Filename, BuildID: f.BuildID})
	case *capture.Process:
		b.process(f.PID).Cmdline = f.Cmdline
	case *capture.JITMap:
		for _, e := range f.Entries {
			b.p.JIT[e.Addr] = e.Name
		}
	case *capture.FileChunk:
		if wantFile(f.Path) {
			b.files.Add(f)
		}
	case *capture.CounterDefine:
		for _, c := range f.Counters {
			if c.Category == "Sampler" && c.Name == "Lost Samples" {
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
	case capture.SymbolsFile, kallsymsPath, record.ProcessFile:
		return true
	}
	return false
}

// sample interns the sample's stack: the key is the pid and the raw
// addresses, so a stack seen before costs one map lookup and no
// allocation.
func (b *builder) sample(s *capture.Sample) {
	k := b.key[:0]
	k = binary.LittleEndian.AppendUint32(k, uint32(s.PID))
	for _, a := range s.Addrs {
		k = binary.LittleEndian.AppendUint64(k, a)
	}
	b.key = k
	var id StackID
	if b.lastStack >= 0 && bytes.Equal(k, b.lastKey) {
		id = b.lastStack // the same stack as the sample before
	} else {
		v, ok := b.stacks[string(k)]
		if !ok {
			v = b.newStack(s.PID, s.Addrs)
			b.stacks[string(k)] = v
		}
		id = v
		b.lastKey = append(b.lastKey[:0], k...)
	}
	b.lastStack = id
	if len(b.chunk) == cap(b.chunk) {
		if len(b.chunk) > 0 {
			b.chunks = append(b.chunks, b.chunk)
		}
		b.chunk = make([]Sample, 0, sampleChunk)
	}
	b.chunk = append(b.chunk, Sample{Time: s.Time, PID: s.PID, TID: s.TID, Stack: id, CPU: s.CPU})
}

// newStack adds the frames of addrs (leaf first, with context markers) as
// a new stack. Addresses before any marker are user addresses, as Sysprof
// assumes for backtrace()-style stacks.
func (b *builder) newStack(pid int32, addrs []uint64) StackID {
	kernel := false
	for _, a := range addrs {
		if capture.IsContext(a) {
			switch a {
			case capture.ContextKernel, capture.ContextGuestKernel, capture.ContextHV:
				kernel = true
			default:
				kernel = false
			}
			continue
		}
		if a == 0 {
			continue
		}
		fk := frameKey{pid: pid, kernel: kernel, addr: a}
		fid, ok := b.frames[fk]
		if !ok {
			fid = FrameID(len(b.p.Frames))
			b.frames[fk] = fid
			b.p.Frames = append(b.p.Frames, Frame{PID: pid, Addr: a, Kernel: kernel, Func: -1})
		}
		b.p.stackFrames = append(b.p.stackFrames, fid)
	}
	b.p.stackStart = append(b.p.stackStart, int32(len(b.p.stackFrames)))
	return StackID(len(b.p.stackStart) - 2)
}

// finish completes the process and thread tables and loads the embedded
// files.
func (b *builder) finish() *Profile {
	p := b.p
	n := len(b.chunk)
	for _, c := range b.chunks {
		n += len(c)
	}
	p.Samples = make([]Sample, 0, n)
	for _, c := range append(b.chunks, b.chunk) {
		p.Samples = append(p.Samples, c...)
	}
	b.chunks, b.chunk = nil, nil
	p.Start, p.End = p.Header.StartTime, p.Header.EndTime
	if b.maxTime >= b.minTime {
		if p.Start <= 0 || p.Start > b.minTime {
			p.Start = b.minTime
		}
		if p.End < p.Start || p.End < b.maxTime {
			p.End = max(p.End, b.maxTime)
		}
	}
	if p.End < p.Start {
		p.End = p.Start
	}
	for i := range p.Samples {
		s := &p.Samples[i]
		b.process(s.PID).Samples++
		t := p.threadIndex[s.TID]
		if t == nil {
			t = &Thread{TID: s.TID, PID: s.PID}
			p.threadIndex[s.TID] = t
		}
		t.Samples++
	}
	b.loadProcessFile()
	b.loadSymbols()
	for _, pr := range p.procIndex {
		slices.SortStableFunc(pr.Maps, func(x, y Mapping) int {
			switch {
			case x.Start < y.Start:
				return -1
			case x.Start > y.Start:
				return 1
			}
			return 0
		})
		if pr.Comm == "" {
			pr.Comm = commOf(pr.Cmdline)
		}
		p.Processes = append(p.Processes, pr)
	}
	slices.SortFunc(p.Processes, func(x, y *Process) int { return int(x.PID) - int(y.PID) })
	for _, t := range p.threadIndex {
		p.Threads = append(p.Threads, t)
	}
	slices.SortFunc(p.Threads, func(x, y *Thread) int { return int(x.TID) - int(y.TID) })
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
	ps, ts, err := record.ReadProcessFile(&b.files)
	if err != nil {
		b.p.Warnings = append(b.p.Warnings, fmt.Sprintf("process info: %v", err))
	}
	for _, pi := range ps {
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

// loadSymbols decodes the __symbols__ bundle and prepares the embedded
// kallsyms.
func (b *builder) loadSymbols() {
	if data, err := b.files.Lookup(capture.SymbolsFile); err == nil {
		t, err := capture.DecodeSymbols(data)
		if err != nil {
			b.p.Warnings = append(b.p.Warnings, fmt.Sprintf("%s: %v (using the %d records before the damage)", capture.SymbolsFile, err, t.Len()))
		}
		if t.Len() > 0 {
			b.p.Bundle = t
		}
	} else if b.hasFile(capture.SymbolsFile) {
		b.p.Warnings = append(b.p.Warnings, err.Error())
	}
	if raw, ok := b.files.Raw(kallsymsPath); ok {
		b.p.Kallsyms = newLazyKallsyms(func() ([]byte, error) { return raw, nil })
	} else if b.hasFile(kallsymsPath) {
		files := &b.files
		b.p.Kallsyms = newLazyKallsyms(func() ([]byte, error) { return files.Lookup(kallsymsPath) })
	}
}

func (b *builder) hasFile(p string) bool {
	for _, e := range b.files.List() {
		if e.Path == p || e.Path == p+".gz" {
			return true
		}
	}
	return false
}
