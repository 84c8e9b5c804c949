package record

import (
	"errors"
	"fmt"
	"io"
	"runtime"
	"time"

	"nsprof/perf"
	"nsprof/proc"
)

// Options configures [Record]. The zero value records the whole system at
// about 1 kHz with every counter except RAPL.
type Options struct {
	// Command, when set, is spawned and recorded from its exec on, with its
	// threads and children; recording ends when it exits.
	Command []string
	// Env adds VAR=VALUE entries to the command's environment.
	Env []string
	// PIDs are existing processes to record, with their threads and the
	// children they create while recording. Ignored with Command.
	PIDs []int
	// System records the whole system while Command runs (perf record -a
	// -- COMMAND): recording ends when the command exits.
	System bool
	// Container records the running podman container of that name, or
	// whose id starts with it, alone: every process in its cgroup, those
	// it starts and those entering it (podman exec's) included, as perf
	// record -a -G does (see container.FindCgroup); without a cgroup of
	// its own (rootless, cgroups v1), those of its PID namespace (see
	// nsTarget); or the running Flatpak app of that id, the processes of
	// its sandboxes' PID namespaces. With Command, while the command
	// runs.
	Container string
	// Duration stops the recording after this long, counted from the
	// end of setting up (events open, processes scanned, the command
	// started), as perf record -- sleep N counts from its child's start:
	// on a loaded machine setting up takes up to a second, which
	// otherwise came out of a short recording. Zero: until the command
	// exits or the context is cancelled.
	Duration time.Duration
	// Frequency is the sampling rate per CPU in Hz. Default 999, a little
	// off 1 kHz so sampling does not beat with millisecond timers.
	Frequency int
	// Event drives sampling (perf record -e). Default perf.EventCPUClock.
	// perf.EventCycles on a machine without a PMU samples cpu-clock
	// instead, with a warning, as perf does; the other hardware events
	// fail there.
	Event perf.Event
	// Tracepoint, "subsystem:event", samples on every hit of that
	// tracepoint instead of Event (perf record -e sched:sched_switch);
	// Frequency does not apply.
	Tracepoint string
	// NoPerf disables CPU sampling (counters and trace fds only).
	NoPerf bool
	// NoMmapBuildIDs asks the kernel for device and inode numbers in
	// MMAP2 records instead of build-ids; files are then identified by
	// the build-ids read from them. While events asking for build-ids are
	// open, the kernel (6.18 at least) flags other sessions' MMAP2
	// records as carrying build-ids too, and perf 6.1 beside nsprof
	// aborts on its own data. Default false: build-ids, as a file that
	// is gone before nsprof reads it still has one.
	NoMmapBuildIDs bool
	// DWARFStack, when non-zero, copies that many bytes of user stack
	// (and the user registers) with each sample and unwinds the user part
	// of its callchain from the call frame information of the mapped
	// files while recording (perf's --call-graph dwarf,SIZE): complete
	// stacks through code built without frame pointers. A multiple of 8,
	// at most perf.MaxUserStack. Zero: the kernel's frame-pointer
	// callchains. Only on x86-64.
	DWARFStack int
	// LeafStack, in frame-pointer mode (DWARFStack zero), copies that many
	// bytes of user stack (and the user registers) with each sample, to
	// find the caller of the sampled function from its call frame
	// information when that function has not set up its frame pointer:
	// the kernel's walk skips that caller (see leafCallers). A multiple of
	// 8, at most perf.MaxUserStack; 512 finds the caller in most samples.
	// Zero: the kernel's callchains alone. Only on x86-64.
	LeafStack int
	// OffCPU also records the time the recorded threads spend off the
	// CPU, with the stack and task state each left it in (see offCPU):
	// the sched_switch tracepoint with callchains, and the switches back
	// in. Needs tracefs and perf events.
	OffCPU bool
	// OffCPUMarks is the shortest off-CPU interval also written as a
	// mark (group capture.OffCPUGroup), which Sysprof's timeline shows;
	// the stacks of all intervals are kept either way. Zero:
	// DefaultOffCPUMarks; negative: no marks.
	OffCPUMarks time.Duration
	// OffCPUSwitchIns says where the switch-ins that end off-CPU
	// intervals come from: OffCPUSwitchInsAuto (""), a BPF program
	// when it loads, else perf's SWITCH records; OffCPUSwitchInsBPF,
	// the BPF program or an error; OffCPUSwitchInsPerf, the SWITCH
	// records (for tests and comparisons).
	OffCPUSwitchIns string
	// OffCPUKernelStacks says where the kernel stacks of the switch
	// outs come from: "" or "bpf", the BPF program of the switch-ins
	// when it can take them (walked once in bpf.KernelStackReuse
	// switch outs of a thread at one place), else perf's hits of the
	// tracepoint; "perf", those hits at every switch out (for tests
	// and comparisons).
	OffCPUKernelStacks string
	// Blocking, when positive, also records the system calls of the
	// recorded threads that take at least this long, each as a mark of
	// group "syscall" with the thread's user stack at entry (see
	// blocking). It needs the raw_syscalls tracepoints.
	Blocking time.Duration
	// MainLoop marks each dispatch of a GLib main context on the main
	// thread of each recorded process (g_main_context_dispatch of its
	// libglib-2.0, probed with uprobes): marks of group MainLoopGroup,
	// as Sysprof's --speedtrack. It needs a command or PIDs.
	MainLoop bool
	// SpeedtrackPreload records MainLoop with the preload library (see
	// FindSpeedtrackLib) even where user probes work: the fallback
	// where they do not (no uprobe_events in tracefs, not root), chosen by itself.
	SpeedtrackPreload bool
	// Spans marks each call of the functions named, on every thread:
	// marks of group capture.SpanGroup named after the function. They need a
	// command or PIDs.
	Spans []ProbeSpec
	// Probes counts and times each call of the functions named, on every
	// thread (a uprobe at entry, a uretprobe at return): per thread and,
	// with ProbeCallers, per call site, written as the call arcs --calls
	// writes (capture.CallsFile). ProbeMarks also marks each call (group
	// capture.ProbeGroup). They need a command or PIDs, and exclude Calls.
	Probes       []ProbeSpec
	ProbeCallers bool
	ProbeMarks   bool
	// Counter sources to leave out, and RAPL energy to add.
	NoCPU, NoMemory, NoDisk, NoNetwork bool
	RAPL                               bool
	// NoDecode leaves out the symbol bundle: names are then looked up when
	// reporting, which works only while the recorded files still exist at
	// the same paths (Sysprof's --no-decode).
	NoDecode bool
	// SymbolCache is a directory keeping, across recordings, the symbol
	// tables of the files samples hit and the source frames of their
	// addresses, by build-id (package symcache; symcache.DefaultDir is
	// the usual one): a second recording of the same binaries reads them
	// instead of parsing the files again. The frames of the other
	// addresses of the files with DWARF read are cached by a filler
	// process started once the capture is closed (Result.Fill; a split
	// recording starts it itself). Empty: no cache. A directory
	// that is unsafe (a symbolic link, another user's, writable by
	// others) is refused with a warning, and the recording goes on
	// without it.
	SymbolCache string
	// A split recording ([RecordSplit]) with a cache drops at each cut
	// the tables it read of the files the ending capture did not sample,
	// and reads them from the cache when a later capture does: its memory
	// is bounded by the files one capture samples.
	// SymbolCacheMaxBytes bounds the cache's size; the least recently
	// used entries are removed beyond it. Zero: symcache.DefaultMaxBytes.
	SymbolCacheMaxBytes int64
	// TraceFD, GJS and GTK hand the command SYSPROF_TRACE_FD, GJS_TRACE_FD
	// (with GJS_ENABLE_PROFILER=1) and GTK_TRACE_FD; what it writes there is
	// merged into the capture at the end. TraceFD and GTK also give it
	// SYSPROF_CONTROL_FD, the only one GTK 4.6 and later read (through
	// libsysprof-capture's collector).
	TraceFD, GJS, GTK bool
	// Memprof loads the memprof library into the command (LD_PRELOAD) and
	// records its heap allocations and frees as ALLOCATION frames.
	// MemprofSample > 0 records about one allocation per that many bytes,
	// weighted so totals stay unbiased; 0 records every one. MemprofLib
	// is the library; default [FindMemprofLib].
	Memprof       bool
	MemprofSample int64
	MemprofLib    string
	// Calls loads the same library into the command to count the calls
	// of its code built with -pg or -finstrument-functions, per arc
	// (call site, function), timed for -finstrument-functions, into
	// capture.CallsFile. With Memprof too, one library does both.
	Calls bool
	// SysprofMemprof loads Sysprof's own allocation collector
	// (libsysprof-memory-4.so, or SysprofMemprofLib) into the command
	// and takes its ALLOCATION frames through SYSPROF_CONTROL_FD, which
	// the command also gets with TraceFD, as with sysprof-cli.
	SysprofMemprof    bool
	SysprofMemprofLib string
	// RedactCmdlines says whose command lines the capture keeps; the
	// zero value, RedactOthers, keeps only those of the users in
	// Users. Users defaults to [InvokingUsers].
	RedactCmdlines Redaction
	Users          []uint32
	// Status, when set, receives a status line (give it a terminal;
	// StatusWidth is its width): while recording processes or the whole
	// system, refreshed a few times a second, and while symbolizing at the
	// end. A spawned command shares the terminal, so its recording shows
	// no live line. The line is cleared before any line is written to Log
	// and before Record returns.
	Status      io.Writer
	StatusWidth int
	// Log receives warnings, such as data lost or not recorded, one line
	// each. Default: discarded.
	Log io.Writer
	// Verbose also writes routine notes to Log: counters this machine
	// lacks, what symbolization and unwinding achieved and took.
	Verbose bool
	// ReleasePages, when set, is called once the recording is set up and
	// again before each symbol bundle: after each, most of the code that
	// ran before does not run again. nsprof passes a function calling
	// [nsprof/internal/exepages.Release], so that the recorder keeps
	// resident only the parts of its binary it still runs.
	ReleasePages func()
	// Version is stored in the capture's metadata.
	Version string
	// FS and SysRoot locate /proc and /sys. Defaults: /proc and /sys.
	FS      proc.FS
	SysRoot string
}

// Result tells how a recording ended.
type Result struct {
	Stats
	// ExitCode is the spawned command's exit status (128+signal when it
	// was killed), or 0 without a command.
	ExitCode int
	// Exit describes how the command ended, empty without a command.
	Exit string
	// Stopped names what stopped the recording: "command exited",
	// "duration", "signal", "write error" or "container stopped".
	Stopped string
	// Started reports whether the recording began. It is false when
	// Record failed while setting up (the command could not start, a pid
	// does not exist, perf events were refused): the capture then holds
	// no more than its preamble.
	Started bool
	// Fill, when not nil, is what the recording left to fill in its
	// symbol cache: the caller starts it (SymbolFill.Start) once the
	// capture is closed, or closes it. RecordSplit starts it itself.
	Fill *SymbolFill
}

func (o *Options) setDefaults() error {
	if o.Frequency == 0 {
		o.Frequency = 999
	}
	if o.Frequency < 0 {
		return errors.New("frequency must be positive")
	}
	if o.Container != "" && (len(o.PIDs) > 0 || o.System || o.NoPerf || o.OffCPU || o.Blocking > 0 || o.MainLoop || len(o.Spans) > 0 || len(o.Probes) > 0 || o.Memprof || o.Calls) {
		return errors.New("a container is recorded with CPU samples alone: not with pids, the whole system, off-CPU time, blocking calls, probes, --memprof or --calls")
	}
	if o.FS.Root == "" {
		o.FS = proc.DefaultFS
	}
	if o.SysRoot == "" {
		o.SysRoot = "/sys"
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	if o.DWARFStack < 0 || o.DWARFStack%8 != 0 || o.DWARFStack > perf.MaxUserStack {
		return fmt.Errorf("dwarf stack size %d is not a multiple of 8 up to %d", o.DWARFStack, perf.MaxUserStack)
	}
	if o.LeafStack < 0 || o.LeafStack%8 != 0 || o.LeafStack > perf.MaxUserStack {
		return fmt.Errorf("leaf stack size %d is not a multiple of 8 up to %d", o.LeafStack, perf.MaxUserStack)
	}
	if o.LeafStack > 0 && runtime.GOARCH != "amd64" {
		return fmt.Errorf("leaf callers are found for amd64 only, not %s", runtime.GOARCH)
	}
	if o.DWARFStack > 0 && runtime.GOARCH != "amd64" {
		return fmt.Errorf("dwarf unwinding is implemented for amd64 only, not %s", runtime.GOARCH)
	}
	if o.RedactCmdlines < RedactOthers || o.RedactCmdlines > RedactNone {
		return fmt.Errorf("command line redaction %d unknown", int(o.RedactCmdlines))
	}
	if o.Users == nil {
		o.Users = InvokingUsers()
	}
	if o.MemprofSample < 0 {
		return errors.New("memprof sample interval must not be negative")
	}
	if o.OffCPU && o.NoPerf {
		return errors.New("off-CPU time needs perf events")
	}
	if o.Blocking < 0 {
		return errors.New("the blocking call threshold must not be negative")
	}
	if o.Blocking > 0 && o.NoPerf {
		return errors.New("blocking calls need perf events")
	}
	if o.Blocking > 0 && (o.Tracepoint == sysEnterTracepoint || o.Tracepoint == sysExitTracepoint) {
		return errors.New("blocking calls record " + o.Tracepoint + " itself: sample on another event")
	}
	switch o.OffCPUSwitchIns {
	case OffCPUSwitchInsAuto, OffCPUSwitchInsBPF, OffCPUSwitchInsPerf:
	default:
		return fmt.Errorf("off-CPU switch-ins from %q: want bpf or perf", o.OffCPUSwitchIns)
	}
	switch o.OffCPUKernelStacks {
	case "", OffCPUSwitchInsBPF, OffCPUSwitchInsPerf:
	default:
		return fmt.Errorf("off-CPU kernel stacks from %q: want bpf or perf", o.OffCPUKernelStacks)
	}
	if o.OffCPU && o.Tracepoint == switchTracepoint {
		return errors.New("off-CPU time records " + switchTracepoint + " itself: sample on another event")
	}
	if len(o.Probes) > 0 && o.Calls {
		return errors.New("probes and calls both write the call arcs: record one or the other")
	}
	if (o.ProbeCallers || o.ProbeMarks) && len(o.Probes) == 0 {
		return errors.New("probe callers and marks need probes")
	}
	if (o.MainLoop || len(o.Spans) > 0 || len(o.Probes) > 0) && (o.NoPerf || o.System || (len(o.Command) == 0 && len(o.PIDs) == 0)) {
		return errors.New("main-loop, span and function probes need perf events and a command or pids (not the whole system)")
	}
	if o.Memprof && o.SysprofMemprof {
		return errors.New("memprof and Sysprof's memprof cannot both be loaded")
	}
	if o.Event < perf.EventCPUClock || o.Event > perf.EventContextSwitches {
		return fmt.Errorf("unknown event %d", int(o.Event))
	}
	if o.System && len(o.PIDs) > 0 {
		return errors.New("the whole system and pids cannot both be recorded")
	}
	if o.Calls && o.SysprofMemprof {
		return errors.New("calls and Sysprof's memprof cannot both be loaded")
	}
	if len(o.Command) == 0 && (o.Memprof || o.Calls) {
		return fmt.Errorf("memprof, calls: %w", ErrPreloadNeedsCommand)
	}
	if len(o.Command) == 0 && (o.TraceFD || o.GJS || o.GTK || o.Memprof || o.Calls || o.SysprofMemprof || len(o.Env) > 0) {
		return errors.New("trace fds, memprof, calls and environment need a command to spawn")
	}
	return nil
}

// traceVars returns the trace-fd variables the options ask for.
func (o *Options) traceVars() []TraceVar {
	var tv []TraceVar
	if o.TraceFD {
		tv = append(tv, TraceVar{Name: "SYSPROF_TRACE_FD"})
	}
	if o.GJS {
		tv = append(tv, TraceVar{Name: "GJS_TRACE_FD", Extra: []string{"GJS_ENABLE_PROFILER=1"}})
	}
	if o.GTK {
		tv = append(tv, TraceVar{Name: "GTK_TRACE_FD"})
	}
	return tv
}
