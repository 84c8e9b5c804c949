package analyze

import (
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"

	"nsprof/capture"
)

// Timeline is what a capture says besides its stacks: marks, counters,
// logs, process lifetimes and frame statistics, for the report views that
// Sysprof shows beside its call graph. Load it with [LoadTimeline].
type Timeline struct {
	// Header is the capture's file header.
	Header capture.FileHeader
	// Start and End bound the capture on the capture clock, as
	// [Profile.Start] and [Profile.End] do.
	Start, End int64
	// Frames counts the frames and their bytes by type.
	Frames map[capture.FrameType]FrameStat
	// CPUs are the distinct CPU numbers of the SAMPLE frames, sorted.
	CPUs []int
	// Samples is the number of SAMPLE frames.
	Samples int
	// Lost is the last value of the "Lost Samples" counter; HasLost says
	// whether the capture has that counter.
	Lost    int64
	HasLost bool
	// Marks and Logs are the MARK and LOG frames in file order.
	Marks []capture.Mark
	Logs  []capture.Log
	// Counters are the defined counters, in definition order, with
	// their values.
	Counters []*Counter
	// Processes are sorted by pid.
	Processes []*ProcessSpan
	// Files are the embedded files.
	Files []capture.EmbeddedFile
	// Metadata holds the METADATA frames' values by id (the last one
	// of an id wins), such as nsprof's "nsprof.frequency" and "n-cpu".
	Metadata map[string]string
	// OutOfRange counts the frames stamped before the capture's start,
	// which do not move it.
	OutOfRange OutOfRange
	// Warnings say what could not be used, such as a damaged process
	// file.
	Warnings []string
}

// FrameStat counts the frames of one type.
type FrameStat struct {
	Count int   `json:"count"`
	Bytes int64 `json:"bytes"`
}

// Counter is one counter and the values it took.
type Counter struct {
	ID          uint32
	Category    string
	Name        string
	Description string
	Type        capture.CounterType
	// Points are the values of the updates in file order; the value the
	// definition carries when there is no update. (Recorders define
	// counters with a placeholder 0, which is no measurement.)
	Points []CounterPoint

	defined bool // Points holds only the definition's value
}

// CounterPoint is one value of a counter at a time on the capture clock.
type CounterPoint struct {
	Time  int64
	Value float64
}

// ProcessSpan is the lifetime and identity of one process.
type ProcessSpan struct {
	PID int32
	// NSPID is the pid inside the process's innermost PID namespace, 0
	// when unknown or the same.
	NSPID int32
	// PPID is the parent's pid from a FORK frame or nsprof's process
	// file, 0 when unknown.
	PPID    int32
	Comm    string
	Cmdline string
	// CmdlineRedacted says the recorder cut Cmdline to the program's
	// name (nsprof record --redact-cmdlines).
	CmdlineRedacted bool
	// Container labels what the process runs in; nil when unknown.
	Container *Container
	// Start is when the process was first seen; End when it exited
	// (Exited) or, when it did not, the capture's end.
	Start, End int64
	Exited     bool
	// Samples counts the SAMPLE frames of the process; Threads the
	// distinct thread ids among them.
	Samples, Threads int
	// Tasks are the threads other than the main thread that the capture
	// tells of (created, named, exited or sampled), by thread id.
	Tasks []*ThreadSpan
	// Programs are the programs the process ran, in order, when it
	// exec'd another during the capture (Comm and Cmdline name the
	// last); nil otherwise.
	Programs []Program

	tids map[int32]struct{}
	// own says frames of the process itself were seen (PROCESS, EXIT,
	// MAP, a sample as its pid, nsprof's process line), not only a FORK
	// frame, which Sysprof's format writes for threads too.
	own bool
}

// Program is a program a process ran, from the time Since (of its exec,
// or when the capture first describes the process, at the capture's
// start at the earliest).
type Program struct {
	Since         int64
	Comm, Cmdline string
}

// ThreadSpan is the lifetime and name of one thread of a process.
type ThreadSpan struct {
	TID int32
	// Comm is the name the thread gave itself, "" when it set none.
	Comm string
	// Start is when the thread was created (or first seen); End when it
	// exited (Exited) or, when it did not, its process's end.
	Start, End int64
	Exited     bool
	// Samples counts the SAMPLE frames of the thread.
	Samples int
}

// LoadTimelineFile loads the timeline of the capture at name; see
// [LoadTimeline]. Errors name the path.
func LoadTimelineFile(name string) (*Timeline, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	t, err := LoadTimeline(f)
	if err != nil {
		err = fmt.Errorf("%s: %w", name, err)
	}
	return t, err
}

// LoadTimeline reads a capture's timeline. As with [Load], a header that
// cannot be read gives a nil Timeline and the error; damage later gives
// the timeline of the frames before it together with the error.
func LoadTimeline(r io.Reader) (*Timeline, error) {
	cr, err := capture.NewReaderWithOptions(r, capture.ReaderOptions{AllowUnknown: true})
	if err != nil {
		return nil, err
	}
	b := newTimelineBuilder(cr.Header())
	var readErr error
	off := cr.Offset()
	for {
		f, err := cr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			readErr = err
			break
		}
		typ := f.Type()
		if u, ok := f.(*capture.Unknown); ok {
			typ = u.RawType
		}
		b.frame(f, typ, cr.Offset()-off)
		off = cr.Offset()
	}
	b.finish()
	return b.t, readErr
}

func newTimelineBuilder(h capture.FileHeader) *timelineBuilder {
	t := &Timeline{Header: h, Frames: make(map[capture.FrameType]FrameStat), Metadata: make(map[string]string)}
	return &timelineBuilder{t: t, procs: make(map[int32]*ProcessSpan), threads: make(map[int32]*threadOf), counters: make(map[uint32]*Counter),
		cpus: make(map[int]bool), minTime: math.MaxInt64, maxTime: math.MinInt64}
}

// frame adds frame f, of type typ as stored, that took size bytes of the
// file (with the frame-index frames before it). It keeps nothing of f.
func (b *timelineBuilder) frame(f capture.Frame, typ capture.FrameType, size int64) {
	st := b.t.Frames[typ]
	st.Count++
	st.Bytes += size
	b.t.Frames[typ] = st
	b.add(f)
}

// threadOf is a thread and the process it belongs to.
type threadOf struct {
	pid int32
	ThreadSpan
}

type timelineBuilder struct {
	t     *Timeline
	procs map[int32]*ProcessSpan
	// threads are the threads known, by thread id: from samples (a tid
	// other than the pid) and nsprof's thread lines.
	threads          map[int32]*threadOf
	counters         map[uint32]*Counter
	cpus             map[int]bool
	files            capture.Files
	lostID           uint32
	minTime, maxTime int64
	// names gathers the programs each process ran (ProcessSpan.Programs).
	names nameHistory
}

func (b *timelineBuilder) proc(pid int32, time int64) *ProcessSpan {
	p := b.procs[pid]
	if p == nil {
		p = &ProcessSpan{PID: pid, Start: time, End: time}
		b.procs[pid] = p
	}
	if time > 0 {
		if p.Start <= 0 || time < p.Start {
			p.Start = time
		}
		if !p.Exited && time > p.End {
			p.End = time
		}
	}
	return p
}

func (b *timelineBuilder) add(f capture.Frame) {
	h := f.Head()
	if h.Time > 0 {
		b.minTime = min(b.minTime, h.Time)
		b.maxTime = max(b.maxTime, h.Time)
	}
	b.t.OutOfRange.add(h.Time, b.t.Header.StartTime)
	switch f := f.(type) {
	case *capture.Sample:
		b.t.Samples++
		if f.CPU >= 0 {
			b.cpus[int(f.CPU)] = true
		}
		p := b.proc(f.PID, f.Time)
		p.Samples++
		p.own = true
		if p.tids == nil {
			p.tids = make(map[int32]struct{})
		}
		p.tids[f.TID] = struct{}{}
		if f.TID != f.PID && f.TID > 0 {
			th := b.thread(f.TID, f.PID, f.Time)
			th.Samples++
		}
	case *capture.Process:
		p := b.proc(f.PID, f.Time)
		p.Cmdline, p.own = f.Cmdline, true
		b.names.frame(f)
	case *capture.Fork:
		b.proc(f.PID, f.Time)
		b.proc(f.ChildPID, f.Time).PPID = f.PID
	case *capture.Exit:
		p := b.proc(f.PID, f.Time)
		p.End, p.Exited, p.own = f.Time, true, true
	case *capture.Map:
		if f.PID > 0 {
			b.proc(f.PID, f.Time).own = true
		}
	case *capture.Mark:
		b.t.Marks = append(b.t.Marks, *f)
	case *capture.Log:
		b.t.Logs = append(b.t.Logs, *f)
	case *capture.Metadata:
		b.t.Metadata[f.ID] = f.Value
	case *capture.CounterDefine:
		for _, c := range f.Counters {
			ctr := &Counter{ID: c.ID, Category: c.Category, Name: c.Name, Description: c.Description, Type: c.Type,
				Points: []CounterPoint{{Time: f.Time, Value: c.Value.Float(c.Type)}}, defined: true}
			b.counters[c.ID] = ctr
			b.t.Counters = append(b.t.Counters, ctr)
			if c.Category == capture.LostSamplesCategory && c.Name == capture.LostSamplesName {
				b.lostID, b.t.HasLost, b.t.Lost = c.ID, true, c.Value.Int64()
			}
		}
	case *capture.CounterSet:
		for _, u := range f.Updates {
			c := b.counters[u.ID]
			if c == nil {
				continue
			}
			if c.defined {
				c.Points, c.defined = c.Points[:0], false
			}
			c.Points = append(c.Points, CounterPoint{Time: f.Time, Value: u.Value.Float(c.Type)})
			if u.ID == b.lostID && b.t.HasLost {
				b.t.Lost = max(b.t.Lost, u.Value.Int64())
			}
		}
	case *capture.FileChunk:
		// Only the files the timeline reads are kept: the others are
		// listed by size (the builder of the profile keeps its own).
		if p := strings.TrimSuffix(f.Path, ".gz"); p == capture.ProcessFile || isMountInfoFile(p) {
			b.files.Add(f)
		} else {
			b.files.AddSize(f)
		}
	}
}

func (b *timelineBuilder) finish() {
	t := b.t
	t.Start, t.End = captureBounds(t.Header, b.minTime, b.maxTime)
	if w := t.OutOfRange.warning("frames", t.Header.StartTime); w != "" {
		t.Warnings = append(t.Warnings, w)
	}
	for c := range b.cpus {
		t.CPUs = append(t.CPUs, c)
	}
	slices.Sort(t.CPUs)
	if n, _ := strconv.ParseInt(t.Metadata[capture.MetaBlockingUnpaired], 10, 64); n > 0 {
		t.Warnings = append(t.Warnings, fmt.Sprintf("blocking calls: the recording lost one side of %d system calls (those calls have no mark)", n))
	}
	t.Files = b.files.List()
	ps, ts, err := capture.ReadProcessFile(&b.files)
	if err != nil {
		t.Warnings = append(t.Warnings, fmt.Sprintf("process info: %v", err))
	}
	for _, ti := range ts {
		if ti.TID == ti.PID || ti.TID <= 0 {
			continue
		}
		th := b.thread(int32(ti.TID), int32(ti.PID), ti.Time)
		if ti.Comm != "" {
			th.Comm = ti.Comm
		}
		if ti.Exited {
			th.End, th.Exited = ti.Time, true
		}
	}
	for i := range ps {
		pi := &ps[i]
		b.names.info(pi)
		p := b.proc(int32(pi.PID), pi.Time)
		p.own = true
		if pi.Comm != "" {
			p.Comm = pi.Comm
		}
		if p.PPID == 0 {
			p.PPID = int32(pi.PPID)
		}
		if n := len(pi.NSpid); n > 1 && pi.NSpid[n-1] != pi.PID {
			p.NSPID = int32(pi.NSpid[n-1])
		}
		if c := pi.Container; c != nil {
			p.Container = &Container{Kind: c.Kind, ID: c.ID, Name: c.Name, AppID: c.AppID, Rootless: c.Rootless, Root: c.Root}
		}
		if p.Cmdline == "" && len(pi.Cmdline) > 0 {
			p.Cmdline = strings.Join(pi.Cmdline, " ")
		}
		if pi.CmdlineRedacted {
			p.CmdlineRedacted = true
		}
	}
	b.labelForeign()
	b.foldThreads()
	for _, p := range b.procs {
		if !p.own || p.PID <= 0 && p.Samples == 0 && p.Cmdline == "" {
			// Only named by FORK frames (a parent the recording did
			// not follow, such as the recorder itself), or frames of
			// the recorder (pid -1) or of no process.
			continue
		}
		if p.Comm == "" {
			p.Comm = commOf(p.Cmdline)
		}
		for _, n := range b.names.of(p.PID) {
			p.Programs = append(p.Programs, Program{Since: max(n.since, t.Start), Comm: n.comm, Cmdline: n.cmdline})
		}
		if !p.Exited {
			p.End = t.End
		}
		p.Start = max(p.Start, t.Start)
		p.Threads, p.tids = len(p.tids), nil
		for _, th := range p.Tasks {
			th.Start = max(th.Start, t.Start)
			if !th.Exited {
				th.End = p.End
			}
		}
		slices.SortFunc(p.Tasks, func(x, y *ThreadSpan) int { return int(x.TID) - int(y.TID) })
		t.Processes = append(t.Processes, p)
	}
	slices.SortFunc(t.Processes, func(x, y *ProcessSpan) int { return int(x.PID) - int(y.PID) })
}

// thread returns what is known of thread tid of process pid, first seen
// at time.
func (b *timelineBuilder) thread(tid, pid int32, time int64) *threadOf {
	th := b.threads[tid]
	if th == nil || th.pid != pid {
		th = &threadOf{pid: pid, ThreadSpan: ThreadSpan{TID: tid, Start: time, End: time}}
		b.threads[tid] = th
	}
	if time > 0 && (th.Start <= 0 || time < th.Start) {
		th.Start = time
	}
	return th
}

// foldThreads moves the threads out of the processes: a FORK frame names
// a new thread as it names a new process, and a task known as a thread of
// another process that has no frame of a process of its own is that
// thread. So is a task known from nothing but the FORK frame of a known
// process (a process would have a MAP or PROCESS frame): Sysprof writes
// one for each thread a program starts. Each thread is listed under its
// process.
func (b *timelineBuilder) foldThreads() {
	for pid, p := range b.procs {
		if p.own || p.PPID <= 0 || b.threads[pid] != nil {
			continue
		}
		if parent := b.procs[p.PPID]; parent != nil && parent.own {
			b.threads[pid] = &threadOf{pid: p.PPID, ThreadSpan: ThreadSpan{TID: pid, Start: p.Start, End: p.End}}
		}
	}
	for tid, th := range b.threads {
		owner := b.procs[th.pid]
		if owner == nil {
			continue
		}
		if p := b.procs[tid]; p != nil {
			if p.own {
				continue // the id is a process's too: a reused pid
			}
			th.Start = min(th.Start, p.Start)
			delete(b.procs, tid)
		}
		owner.Tasks = append(owner.Tasks, &th.ThreadSpan)
	}
}

// Duration returns the capture's length in nanoseconds.
func (t *Timeline) Duration() int64 { return max(0, t.End-t.Start) }

// ThreadCount returns the number of threads the capture tells of: each
// process's main thread and its other threads ([ProcessSpan.Tasks]).
func (t *Timeline) ThreadCount() int {
	n := 0
	for _, p := range t.Processes {
		n += 1 + len(p.Tasks)
	}
	return n
}

// SampledProcesses returns the number of processes with stack samples, as
// [Profile.SampledProcesses] counts them; len(t.Processes) is the number
// of processes in the capture, as len(Profile.Processes) counts them.
func (t *Timeline) SampledProcesses() int {
	n := 0
	for _, p := range t.Processes {
		if p.Samples > 0 {
			n++
		}
	}
	return n
}

// SampledThreads returns the number of distinct threads with samples.
func (t *Timeline) SampledThreads() int {
	n := 0
	for _, p := range t.Processes {
		n += p.Threads
	}
	return n
}
