package analyze

import (
	"path"
	"slices"
	"sort"
	"strings"

	"nsprof/capture"
)

// FrameID, FuncID and StackID index [Profile.Frames], [Profile.Funcs] and
// the profile's interned stacks.
type (
	FrameID int32
	FuncID  int32
	StackID int32
)

// Profile is the analysis model of one capture.
type Profile struct {
	// Header is the capture's file header.
	Header capture.FileHeader
	// Start and End bound the capture on the capture clock: the header's
	// times, or the frame times when the header was not finished.
	Start, End int64
	// Processes are sorted by pid; see [Profile.Process].
	Processes []*Process
	// Threads are sorted by tid; see [Profile.Thread].
	Threads []*Thread
	// Samples are the stack samples and allocations in file order. Each
	// has a value per sample type ([Profile.Value]).
	Samples []Sample
	// SampleTypes describe the columns of the samples' values:
	// [SamplesType] first, then cpu, off_cpu and wall when known, then
	// the allocation types when the capture has ALLOCATION frames. A
	// SAMPLE frame counts 1 sample; an off-CPU interval counts 0 samples
	// and its time; an allocation counts 0 samples and its objects and
	// bytes.
	SampleTypes []ValueType
	// Totals are the sums of each column over all samples.
	Totals []int64
	// Frames are the distinct places in code of all stacks: one frame
	// a (pid, address) pair, except that the frames at the same code in
	// several processes are one (see [Frame]).
	Frames []Frame
	// Funcs are the distinct (name, DSO) pairs the frames resolve to.
	Funcs []Function
	// Event and Frequency are the sampling event and its frequency in
	// Hz that the recording states (nsprof.event, nsprof.frequency):
	// "" and 0 when it does not say.
	Event     string
	Frequency int64
	// Hostname is the recording machine's host name
	// ([capture.MetaHostname]), or "" when the capture does not say.
	Hostname string
	// Lost is the last value of the "Lost Samples" counter; HasLost says
	// whether the capture has that counter at all.
	Lost    int64
	HasLost bool
	// Allocations counts the ALLOCATION frames (allocations and frees);
	// the allocations are samples with the allocation sample types.
	Allocations int
	// Timeline is the capture's timeline when [LoadOptions.Timeline]
	// asked for it in the same pass, else nil.
	Timeline *Timeline
	// Bundle holds the capture's __symbols__ records, or nil.
	Bundle *capture.SymbolTable
	// Lines holds the source lines and inline frames nsprof record wrote
	// for sampled addresses ([capture.LinesFile]), or nil. Loading drops
	// it once it named the frames (their Loc holds what it says), unless
	// [LoadOptions.NoSymbolize] left them to be named later.
	Lines *capture.LineTable
	// Kallsyms is the capture's embedded /proc/kallsyms (decompressed
	// lazily), or nil.
	Kallsyms *KallsymsSymbolizer
	// KernelBuildID is the lowercase hex GNU build-id of the recorded
	// kernel, from its notes embedded as [capture.KernelNotesFile], or
	// "" when the capture has none.
	KernelBuildID string
	// JIT names addresses defined by JITMAP frames.
	JIT map[uint64]string
	// OutOfRange counts the samples stamped before the capture's start,
	// which do not move it.
	OutOfRange OutOfRange
	// Warnings say what could not be used, such as a damaged __symbols__
	// file. Damage to the capture itself is Load's error.
	Warnings []string
	// SymbolStats counts the frames each symbolizer named in the last
	// [Profile.Symbolize], by its name ("bundle", "kallsyms", "jit", or
	// the String of a custom one); "unresolved" counts the rest, and
	// [UnnamedInline] the inlined calls of the named frames that the
	// debug information left without a function name.
	SymbolStats map[string]int
	// Addresses keeps one function per address that no symbolizer
	// named ("FILE+0xOFFSET", "[unknown] 0xADDR") in the next
	// [Profile.Symbolize]; by default they make one function per DSO
	// (see [UnnamedFunction]). Each frame's [Frame.Loc] keeps its
	// address's name either way.
	Addresses bool

	procIndex map[int32]*Process
	// images holds the pids given to processes' earlier images (in
	// procIndex, not Processes; see [Profile.splitImages]).
	images      map[int32]bool
	threadIndex map[int32]*Thread
	stackStart  []int32 // stack i is stackFrames[stackStart[i]:stackStart[i+1]]
	stackFrames []FrameID
	// lazy, when set, holds the stack tables instead, made on first use
	// (see [lazyStacks]).
	lazy *lazyStacks
	// rows holds the samples' values, by Sample.Row; nil when every
	// sample is a stack sample (each with stackValues).
	rows *valueTable
	// value is the column the views weigh by; see [Profile.Selected].
	value int
	// unitSamples says every sample is a stack sample; stackValues are
	// the values of one, by column; allocCol is the first allocation
	// column, 0 when there is none.
	unitSamples bool
	stackValues []int64
	allocCol    int
	// offCol, wallCol and blockCol are the columns of off-CPU time, wall
	// time and blocking calls, -1 when there is none.
	offCol, wallCol, blockCol int
	// callCol is the first column of instrumented calls, 0 when there
	// is none; callStats what the recording says of them.
	callCol   int
	callStats callStats
	// kinds are the kinds of measurement of the columns (kindStack...).
	kinds []int
	// heap holds the allocations and frees in time order, sampleBytes
	// the recording's allocation sampling interval and memLost what it
	// could not record: what [View.Heap] replays.
	heap        *heapEvents
	sampleBytes int64
	memLost     struct {
		has          bool
		lost, signal int64
	}
	// offStats are the recording's off-CPU counts.
	offStats offCPUStats
	// blockStats are the recording's blocking-call counts.
	blockStats blockingStats
	// inline holds the frames of the inlined calls, made once for the
	// views that show them; shallow copies of the profile share it.
	inline *lazyInline
	// alts are the processes and addresses of the frames merged into
	// each frame, for symbolizers that know some processes only (see
	// [Profile.mergeSameCode]).
	alts altFrames
	// inlineCalls counts the inlined calls of the frames as last named:
	// the entries of their locations' Inline.
	inlineCalls int
}

// Process is one process of the capture.
type Process struct {
	PID int32
	// Cmdline is the last PROCESS frame's command line (argv joined by
	// spaces, or the comm for kernel threads).
	Cmdline string
	// Comm is the short name: from nsprof's process file, else the base
	// name of the command line's first word.
	Comm string
	// names are the names of the programs the process ran, by time, when
	// it exec'd another during the capture; nil otherwise (see
	// [Process.NameAt]).
	names []procName
	// NSPID is the pid inside the process's innermost PID namespace, or 0
	// when unknown or the same as PID.
	NSPID int32
	// Container labels what the process runs in: from nsprof's process
	// file, or from the /proc/PID/mountinfo another recorder embedded
	// (sysprof-cli); nil when the capture does not say.
	Container *Container
	// Maps are the process's mappings sorted by start address.
	Maps []Mapping
	// Samples is the number of stack samples (SAMPLE frames) of the
	// process.
	Samples int
	// replaced are the ranges of Maps that replaced other mappings
	// (see [resolveMaps]).
	replaced []addrSpan
	// firstSample is the time of the process's earliest sample of any
	// kind (its stack taken then): 0 for none, -1 when one has no time.
	firstSample int64
}

// Container labels what a process runs in, from nsprof's process file or,
// in another recorder's capture, from the process's embedded mount table.
type Container struct {
	// Kind is "host", "podman", "flatpak" or "namespace".
	Kind string `json:"kind"`
	// ID and Name identify a podman container.
	ID   string `json:"id,omitempty"`
	Name string `json:"name,omitempty"`
	// AppID is a Flatpak application id.
	AppID    string `json:"app_id,omitempty"`
	Rootless bool   `json:"rootless,omitempty"`
	// Root is where another mount namespace's root comes from on the
	// host, when known.
	Root string `json:"root,omitempty"`
}

// Label returns a short name: "host", "podman:NAME (ID)" with the first 12
// hex digits of the id, as podman ps shows it (or "podman:NAME" or
// "podman:ID" when only one is known), "flatpak:APPID", "namespace:ROOT"
// or the kind. A nil Container is "unknown".
func (c *Container) Label() string {
	if c == nil {
		return "unknown"
	}
	switch {
	case c.Kind == "podman" && c.Name != "" && c.ID != "":
		return "podman:" + c.Name + " (" + c.ShortID() + ")"
	case c.Kind == "podman" && c.Name != "":
		return "podman:" + c.Name
	case c.Kind == "podman" && c.ID != "":
		return "podman:" + c.ShortID()
	case c.Kind == "flatpak" && c.AppID != "":
		return "flatpak:" + c.AppID
	case c.Kind == "namespace" && c.Root != "":
		return "namespace:" + c.Root
	case c.Kind == "":
		return "unknown"
	}
	return c.Kind
}

// ShortID returns the first 12 characters of the container's id, as
// podman ps shows it.
func (c *Container) ShortID() string { return c.ID[:min(12, len(c.ID))] }

// Match reports whether the container matches the label pattern s, as
// --container takes it: "host" and other kinds by name, a podman
// container by a substring of its name or a prefix of its id, a Flatpak
// app by a substring of its id, or a substring of [Container.Label].
func (c *Container) Match(s string) bool {
	if c == nil {
		return s == "unknown"
	}
	switch {
	case s == c.Kind:
		return true
	case c.Name != "" && strings.Contains(c.Name, s):
		return true
	case c.ID != "" && strings.HasPrefix(c.ID, s):
		return true
	case c.AppID != "" && strings.Contains(c.AppID, s):
		return true
	}
	return strings.Contains(c.Label(), s)
}

// ContainerLabels returns the labels ([Container.Label]) of the
// containers p's processes ran in, each once, sorted: what a
// [Filter.Container] that matched nothing could have named.
func (p *Profile) ContainerLabels() []string {
	seen := map[string]bool{}
	var out []string
	for _, pr := range p.Processes {
		if l := pr.Container.Label(); !seen[l] {
			seen[l] = true
			out = append(out, l)
		}
	}
	slices.Sort(out)
	return out
}

// Thread is one thread of the capture.
type Thread struct {
	TID, PID int32
	// NSTID is the thread id inside its innermost PID namespace, or 0.
	NSTID int32
	// Samples is the number of stack samples (SAMPLE frames) of the
	// thread.
	Samples int
}

// Mapping is one MAP frame: a file mapped at Start..End (exclusive) from
// file offset Offset.
type Mapping struct {
	Start, End, Offset, Inode uint64
	File, BuildID             string
	// time is the MAP frame's, for [resolveMaps].
	time int64
	// obj numbers the mapped file by its build-id, -1 for none (see
	// [Profile.numberObjects]).
	obj int32
	// name, when set, is Base's (see [Profile.nameRootMappings]).
	name string
}

// Base returns the base name of the mapped file, the name itself for
// pseudo files such as "[vdso]", and "[anon]" for anonymous memory
// (no name, or perf's "//anon"), such as JIT code no perf map names.
func (m *Mapping) Base() string {
	if m.name != "" {
		return m.name
	}
	if strings.HasPrefix(m.File, "[") {
		return m.File
	}
	if m.File == "" || strings.HasPrefix(m.File, "//anon") {
		return "[anon]"
	}
	return path.Base(m.File)
}

// IsFile reports whether m maps a file, rather than anonymous memory or a
// pseudo file such as "[vdso]" or "[heap]".
func (m *Mapping) IsFile() bool {
	return m.File != "" && !strings.HasPrefix(m.File, "[") && !strings.HasPrefix(m.File, "//anon")
}

// Sample is one stack sample or allocation.
type Sample struct {
	Time     int64
	PID, TID int32
	Stack    StackID
	// Row is the sample's row of values ([Profile.Value]): its index in
	// the loaded profile's Samples.
	Row int32
	CPU int16
}

// Frame is one place in code: an address of a process, standing for the
// same code in every process that runs it (the same offset of a file of
// the same build-id, the same kernel address; see
// [Profile.mergeSameCode]). PID and Addr are those of the first sample
// that had it; a sample's own process is [Sample.PID].
type Frame struct {
	// (The fields are ordered for size: 32 bytes, not 40.)
	Addr uint64
	// Loc names the code (never nil once the profile is loaded; frames
	// naming the same place may share it: do not modify it); Func is the
	// function it belongs to.
	Loc  *Location
	PID  int32
	Func FuncID
	// Kernel says the address came after a kernel context marker.
	Kernel bool
	// Caller says Addr is a return address: a user frame below the
	// first of its stack. It is named from Addr-1, the last byte of the
	// call, since the instruction after a call may belong to another
	// line, inlined function or even function.
	Caller bool
}

// Function is a distinct (name, DSO) pair.
type Function struct {
	Name, DSO string
	Kernel    bool
}

// Stack returns the frames of stack id, leaf first. The slice is shared:
// do not modify it.
func (p *Profile) Stack(id StackID) []FrameID {
	if l := p.lazy; l != nil {
		t := l.tables()
		return t.frames[t.start[id]:t.start[id+1]]
	}
	return p.stackFrames[p.stackStart[id]:p.stackStart[id+1]]
}

// NumStacks returns the number of distinct stacks.
func (p *Profile) NumStacks() int {
	if l := p.lazy; l != nil {
		return l.n
	}
	return len(p.stackStart) - 1
}

// Process returns the process pid, or nil.
func (p *Profile) Process(pid int32) *Process { return p.procIndex[pid] }

// Thread returns the thread tid, or nil.
func (p *Profile) Thread(tid int32) *Thread { return p.threadIndex[tid] }

// Mapping returns the mapping of process pid containing addr, or nil.
// Where MAP frames overlap, the latest wins (see [resolveMaps]).
func (p *Profile) Mapping(pid int32, addr uint64) *Mapping {
	return p.procIndex[pid].mapping(addr)
}

// mapping returns the mapping of pr holding addr, or nil (also for a nil
// pr).
func (pr *Process) mapping(addr uint64) *Mapping {
	if pr == nil {
		return nil
	}
	ms := pr.Maps
	// The maps do not overlap (see [resolveMaps]).
	i := sort.Search(len(ms), func(i int) bool { return ms[i].Start > addr }) - 1
	if i >= 0 && addr < ms[i].End {
		return &ms[i]
	}
	return nil
}

// SampledProcesses returns the number of processes with stack samples;
// len(p.Processes) is the number of processes in the capture (with frames
// of their own: PROCESS, MAP, a sample, nsprof's process line). The
// [Timeline] counts both the same way.
func (p *Profile) SampledProcesses() int {
	n := 0
	for _, pr := range p.Processes {
		if pr.Samples > 0 {
			n++
		}
	}
	return n
}

// Duration returns the capture's length in nanoseconds.
func (p *Profile) Duration() int64 { return max(0, p.End-p.Start) }
