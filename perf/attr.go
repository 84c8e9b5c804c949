package perf

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"unsafe"

	"nsprof/internal/unix"
)

// Event is what drives sampling.
type Event int

const (
	// EventCPUClock samples on the software cpu-clock event, a
	// high-resolution timer that runs while the task (or CPU) is busy. It
	// works everywhere, including virtual machines without a PMU.
	EventCPUClock Event = iota
	// EventCycles samples on the hardware CPU-cycles counter. When the
	// machine has no usable PMU (perf_event_open fails with ENOENT,
	// EOPNOTSUPP or ENODEV), the Reader falls back to EventCPUClock; see
	// [Reader.Event].
	EventCycles
	// EventTaskClock samples on the software task-clock event, the time
	// the task runs (per task, not per CPU).
	EventTaskClock
	// EventInstructions, EventCacheMisses and EventBranchMisses sample on
	// hardware counters: opening them fails without a PMU that has them.
	EventInstructions
	EventCacheMisses
	EventBranchMisses
	// EventPageFaults and EventContextSwitches sample on the software
	// page-fault and context-switch counts.
	EventPageFaults
	EventContextSwitches
)

// eventNames are the perf tool's names of the events, then its aliases.
var eventNames = []struct {
	name string
	ev   Event
}{
	{"cpu-clock", EventCPUClock}, {"cycles", EventCycles}, {"task-clock", EventTaskClock},
	{"instructions", EventInstructions}, {"cache-misses", EventCacheMisses}, {"branch-misses", EventBranchMisses},
	{"page-faults", EventPageFaults}, {"context-switches", EventContextSwitches},
	{"cpu-cycles", EventCycles}, {"faults", EventPageFaults}, {"cs", EventContextSwitches},
}

// String returns the perf tool's name of the event.
func (e Event) String() string {
	for _, n := range eventNames {
		if n.ev == e {
			return n.name
		}
	}
	return fmt.Sprintf("Event(%d)", int(e))
}

// Hardware reports whether e counts in the CPU's performance monitoring
// unit, which virtual machines often lack.
func (e Event) Hardware() bool {
	switch e {
	case EventCycles, EventInstructions, EventCacheMisses, EventBranchMisses:
		return true
	}
	return false
}

// ParseEvent returns the event perf calls name, perf's aliases cpu-cycles,
// faults and cs included.
func ParseEvent(name string) (Event, error) {
	for _, n := range eventNames {
		if n.name == name {
			return n.ev, nil
		}
	}
	return 0, fmt.Errorf("unknown event %q: want one of %s", name, EventNames())
}

// EventNames lists the names [ParseEvent] accepts, comma-separated.
func EventNames() string {
	var b []byte
	for i, n := range eventNames {
		if i > 0 {
			b = append(b, ", "...)
		}
		b = append(b, n.name...)
	}
	return string(b)
}

// config returns the perf_event_attr type and config of e.
func (e Event) config() (typ uint32, config uint64) {
	switch e {
	case EventCycles:
		return typeHardware, configHWCycles
	case EventInstructions:
		return typeHardware, configHWInstructions
	case EventCacheMisses:
		return typeHardware, configHWCacheMisses
	case EventBranchMisses:
		return typeHardware, configHWBranchMisses
	case EventTaskClock:
		return typeSoftware, configSWTaskClock
	case EventPageFaults:
		return typeSoftware, configSWPageFaults
	case EventContextSwitches:
		return typeSoftware, configSWContextSwitches
	}
	return typeSoftware, configSWCPUClock
}

// Defaults of [Options].
const (
	DefaultFrequency      = 1000
	DefaultRingPages      = 128 // 512 KiB per CPU with 4 KiB pages
	DefaultStackRingPages = 512 // when Options.UserStack > 0
	// MaxUserStack is the largest UserStack: a record's size is a u16 and
	// the stack copy shares it with the other sample fields.
	MaxUserStack = 65528
)

// Options configures the events opened by [OpenWithOptions]. The zero value
// samples cpu-clock at 1000 Hz with frame-pointer callchains, MMAP2
// records with build IDs, COMM/FORK/EXIT records and CLOCK_MONOTONIC
// timestamps.
type Options struct {
	// Event drives sampling. Default EventCPUClock.
	Event Event
	// EventTracepoint, "subsystem:event", samples on every hit of that
	// tracepoint instead of Event (perf record -e sched:sched_switch),
	// with callchains as for Event; Period (default 1) keeps one hit in
	// Period, Frequency is ignored. Requires tracefs (see [Tracepoint]).
	EventTracepoint string
	// Frequency is the sampling rate per CPU in Hz (perf record -F). The
	// kernel rejects rates above kernel.perf_event_max_sample_rate and may
	// lower that limit at run time. Default 1000 when Period is 0.
	Frequency uint64
	// Period samples once every Period events instead: nanoseconds for
	// EventCPUClock and EventTaskClock, events counted for the others.
	// Excludes Frequency.
	Period uint64

	// UserStack, when non-zero, also records the user registers and the
	// top UserStack bytes of the user stack with every sample
	// (PERF_SAMPLE_REGS_USER and PERF_SAMPLE_STACK_USER), for DWARF
	// unwinding. It must be a multiple of 8 and at most MaxUserStack; perf
	// uses 8192. Only amd64 and arm64 are supported. Default 0: off.
	UserStack uint32
	// FrameRegs records, with UserStack, only the user registers that
	// unwinding a few frames by CFI needs (instruction, stack and frame
	// pointers: PERF_SAMPLE_REGS_USER) instead of every general-purpose
	// register, which unwinding whole stacks needs: 24 bytes a sample
	// instead of 136, and less of the kernel's time at every hit, which
	// for a tracepoint such as sched:sched_switch is in the task's
	// context switch.
	FrameRegs bool
	// TracepointStack, when non-zero and below UserStack, is the stack
	// copy of the hits of StackTracepoints and UserStackTracepoints
	// instead: a task at a tracepoint inside a system call is below a
	// libc wrapper or two of small frames, and every byte is copied at
	// every hit (a context switch, a system call). A multiple of 8.
	// Default 0: UserStack.
	TracepointStack uint32
	// MaxCallchain limits the kernel's callchain depth (sample_max_stack).
	// Default 0: kernel.perf_event_max_stack.
	MaxCallchain uint16
	// ExcludeKernel samples user space only (exclude_kernel), which
	// kernel.perf_event_paranoid=2 requires of unprivileged users.
	ExcludeKernel bool
	// ExcludeKernelCallchain leaves kernel frames out of callchains
	// (exclude_callchain_kernel); the sampled IP may still be a kernel
	// address.
	ExcludeKernelCallchain bool
	// ExcludeUserCallchain leaves user frames out of callchains
	// (exclude_callchain_user), as perf does when it unwinds user stacks
	// from UserStack copies itself.
	ExcludeUserCallchain bool
	// IncludeIdle keeps samples of idle CPUs (the swapper, pid 0) in
	// system-wide mode. Default: they are dropped (exclude_idle, which the
	// cpu-clock event honours too). It does not matter for other targets.
	IncludeIdle bool
	// NoBuildID makes MMAP2 records carry device and inode numbers instead
	// of the file's build ID (which needs Linux 5.12).
	NoBuildID bool

	// RingPages is the number of data pages in each CPU's ring buffer, a
	// power of two. Default DefaultRingPages, or DefaultStackRingPages
	// when UserStack is set.
	RingPages int
	// WakeupBytes wakes a waiting [Reader.ReadInto] once a ring holds this
	// many bytes (wakeup_watermark). Default: a quarter of the ring.
	// Excludes WakeupEvents.
	WakeupBytes int
	// WakeupEvents wakes a waiting [Reader.ReadInto] after this many
	// samples (wakeup_events). Excludes WakeupBytes.
	WakeupEvents int
	// StartDisabled opens the events disabled: nothing is recorded until
	// [Reader.Enable]. Events for an [Exec] target always start at exec.
	StartDisabled bool
	// Tracepoints are also recorded, every hit, for the same tasks, into
	// the same rings: as samples whose [Sample.RawData] starts with the
	// tracepoint's id. Names are "subsystem:event", such as
	// "syscalls:sys_exit_clone". Requires tracefs (see [Tracepoint]).
	Tracepoints []string
	// StackTracepoints are recorded as Tracepoints are, but each hit
	// with the callchain (and the user registers and stack copy with
	// UserStack) of the main event's samples: where the task was when
	// it hit the tracepoint, such as "sched:sched_switch" for where a
	// task left the CPU.
	StackTracepoints []string
	// UserStackTracepoints are recorded as StackTracepoints are, but
	// with the user part of the callchain only
	// (exclude_callchain_kernel): the kernel's unwinding is the costly
	// part of a hit on a hot path, such as "raw_syscalls:sys_enter",
	// whose kernel frames are always the system call entry's.
	UserStackTracepoints []string
	// CPUWideTracepoints are recorded as Tracepoints are, but with
	// SampleCPUWide opened once per CPU for every task, not per followed
	// task: for events the followed tasks seldom hit, such as
	// "syscalls:sys_exit_clone". Each event of a task is one more the
	// kernel stops and starts, or walks, at every context switch of the
	// task (a program switching hundreds of thousands of times a second
	// pays for each: bench/offcpu-overhead.sh); a per-CPU event costs
	// nothing at a switch but sees every task's hits, which
	// [Reader.CPUWide] tells apart, and dropping the other tasks' hits is
	// the caller's work, as for SampleCPUWide's samples. Without
	// SampleCPUWide (or with [AllTasks]) they are Tracepoints.
	CPUWideTracepoints []string
	// ContextSwitch also writes a [RecordSwitch] record (with
	// [AllTasks], a [RecordSwitchCPUWide]) each time a recorded task
	// enters or leaves a CPU (perf record --switch-events).
	ContextSwitch bool
	// Namespaces also writes a [RecordNamespaces] record for each task
	// created, and each time one enters or leaves a namespace (perf
	// record --namespaces): what a task that exits before /proc is read
	// ran in. It needs CAP_PERFMON (or CAP_SYS_ADMIN): without, the
	// events are opened without it, as [Reader.Namespaces] says.
	Namespaces bool
	// SampleCPUWide opens the sampling event (Event, at Frequency or
	// Period) once per CPU for every task (pid -1), not per followed
	// task, for targets other than [AllTasks]; the MMAP, COMM, FORK,
	// EXIT and SWITCH records and the tracepoints stay per task, the
	// former on a dummy event, or, when there are StackTracepoints, on
	// the first of them, which the kernel so has one event fewer to stop
	// and start at each switch of a task. A per-task cpu-clock or task-clock event
	// is a timer the kernel starts and cancels at each context switch
	// of the task, whatever its rate: for a program that switches
	// hundreds of thousands of times a second, much of what sampling
	// costs it (bench/offcpu-overhead.sh). The per-CPU event has no cost
	// at a switch, but samples every task that runs on the CPU:
	// [Reader.CPUWide] tells its samples apart, and dropping those of
	// other tasks is the caller's work. It needs CAP_PERFMON or
	// kernel.perf_event_paranoid <= 0 (an error wrapping
	// os.ErrPermission otherwise). The per-CPU event of an [Exec]
	// target samples from the start, not from the exec.
	SampleCPUWide bool
	// Uprobes are user probes recorded for the same tasks, every hit,
	// and in the tasks those create, into rings of their own, one per
	// CPU; [Reader.Uprobe]
	// tells their samples apart. They are defined in tracefs's
	// uprobe_events ([ErrNoUprobes]) and need root.
	Uprobes []Uprobe
}

// settings is Options with defaults applied and checked against the host.
type settings struct {
	Options
	pageSize int
	regs     uint64
	tpIDs    []uint64
	tpStack  []bool // tpIDs[i] is one of StackTracepoints or UserStackTracepoints
	tpUser   []bool // tpIDs[i] is one of UserStackTracepoints
	// tpCPUWide: tpIDs[i] is one of CPUWideTracepoints
	tpCPUWide []bool
	tpNames   []string
	// mainTP is the id of EventTracepoint, 0 without.
	mainTP uint64
}

func (o Options) settings(pageSize int, goarch string) (settings, error) {
	s := settings{Options: o, pageSize: pageSize}
	if o.Event < EventCPUClock || o.Event > EventContextSwitches {
		return s, fmt.Errorf("unknown event %d", int(o.Event))
	}
	if o.EventTracepoint != "" {
		tp, err := LookupTracepoint(o.EventTracepoint)
		if err != nil {
			return s, err
		}
		s.mainTP, s.Frequency = uint64(tp.ID), 0
		if s.Period == 0 {
			s.Period = 1
		}
	} else if o.Frequency != 0 && o.Period != 0 {
		return s, errors.New("frequency and period are exclusive")
	}
	if s.Frequency == 0 && s.Period == 0 {
		s.Frequency = DefaultFrequency
	}
	if o.UserStack != 0 {
		if o.UserStack%8 != 0 || o.UserStack > MaxUserStack {
			return s, fmt.Errorf("user stack size %d is not a multiple of 8 up to %d", o.UserStack, MaxUserStack)
		}
		if s.regs = userRegsMask(goarch, o.FrameRegs); s.regs == 0 {
			return s, fmt.Errorf("user stack sampling: registers of %s are unknown", goarch)
		}
	}
	if o.TracepointStack%8 != 0 || o.TracepointStack > MaxUserStack {
		return s, fmt.Errorf("tracepoint stack size %d is not a multiple of 8 up to %d", o.TracepointStack, MaxUserStack)
	}
	switch {
	case o.RingPages == 0 && o.UserStack != 0:
		s.RingPages = DefaultStackRingPages
	case o.RingPages == 0:
		s.RingPages = DefaultRingPages
	case o.RingPages < 0 || o.RingPages&(o.RingPages-1) != 0:
		return s, fmt.Errorf("ring pages %d is not a power of two", o.RingPages)
	}
	all := slices.Concat(o.Tracepoints, o.StackTracepoints, o.UserStackTracepoints, o.CPUWideTracepoints)
	stacks := len(o.Tracepoints) + len(o.StackTracepoints) + len(o.UserStackTracepoints)
	for i, name := range all {
		tp, err := LookupTracepoint(name)
		if err != nil {
			return s, err
		}
		s.tpIDs = append(s.tpIDs, uint64(tp.ID))
		s.tpStack = append(s.tpStack, i >= len(o.Tracepoints) && i < stacks)
		s.tpUser = append(s.tpUser, i >= len(o.Tracepoints)+len(o.StackTracepoints) && i < stacks)
		s.tpCPUWide = append(s.tpCPUWide, i >= stacks)
		s.tpNames = append(s.tpNames, name)
	}
	if len(o.Uprobes) > 0 {
		if _, err := uprobeEventsFile(); err != nil {
			return s, err
		}
		for _, u := range o.Uprobes {
			if u.Path == "" || strings.IndexByte(u.Path, 0) >= 0 {
				return s, fmt.Errorf("%v: the path must be non-empty, without NUL", u)
			}
		}
	}
	size := s.RingPages * pageSize
	if int(o.UserStack)*2 > size {
		return s, fmt.Errorf("ring of %d bytes cannot hold two samples with %d-byte stacks", size, o.UserStack)
	}
	switch {
	case o.WakeupBytes != 0 && o.WakeupEvents != 0:
		return s, errors.New("wakeup bytes and wakeup events are exclusive")
	case o.WakeupBytes < 0 || o.WakeupBytes >= size:
		return s, fmt.Errorf("wakeup bytes %d outside the %d-byte ring", o.WakeupBytes, size)
	case o.WakeupEvents < 0:
		return s, fmt.Errorf("negative wakeup events %d", o.WakeupEvents)
	case o.WakeupBytes == 0 && o.WakeupEvents == 0:
		s.WakeupBytes = size / 4
	}
	return s, nil
}

// format returns the record layout the attributes produce.
func (s *settings) format() Format {
	st := uint64(sampleIdentifier | sampleIP | sampleTID | sampleTime | sampleCPU | samplePeriod | sampleCallchain)
	var regs uint64
	if s.UserStack != 0 {
		st |= sampleRegsUser | sampleStackUser
		regs = s.regs
	}
	if len(s.tpIDs) > 0 {
		st |= sampleRaw
	}
	return Format{SampleType: st, RegsUser: regs, SampleIDAll: true}
}

// attr builds the perf_event_attr for event ev (which may differ from
// s.Event after a fallback). systemWide events are not inherited and may
// exclude idle; onExec events start at the target's execve.
func (s *settings) attr(ev Event, systemWide, onExec bool) unix.PerfEventAttr {
	f := s.format()
	a := unix.PerfEventAttr{
		Size:              uint32(unsafe.Sizeof(unix.PerfEventAttr{})),
		Sample_type:       f.SampleType,
		Sample_regs_user:  f.RegsUser,
		Sample_stack_user: s.UserStack,
		Sample_max_stack:  s.MaxCallchain,
		Clockid:           unix.CLOCK_MONOTONIC,
	}
	a.Type, a.Config = ev.config()
	if s.mainTP != 0 {
		a.Type, a.Config = typeTracepoint, s.mainTP
	}
	a.Bits = attrDisabled | attrMmap | attrMmap2 | attrComm | attrCommExec | attrTask |
		attrSampleIDAll | attrUseClockID
	if s.Period != 0 {
		a.Sample = s.Period
	} else {
		a.Sample = s.Frequency
		a.Bits |= attrFreq
	}
	if !s.NoBuildID {
		a.Bits |= attrBuildID
	}
	if !systemWide {
		a.Bits |= attrInherit
	} else if !s.IncludeIdle {
		a.Bits |= attrExcludeIdle
	}
	if onExec {
		a.Bits |= attrEnableOnExec
	}
	if s.ContextSwitch {
		a.Bits |= attrContextSwitch
	}
	if s.Namespaces {
		a.Bits |= attrNamespaces
	}
	if s.ExcludeKernel {
		a.Bits |= attrExcludeKernel | attrExcludeHV
	}
	if s.ExcludeKernelCallchain {
		a.Bits |= attrExcludeCallchainK
	}
	if s.ExcludeUserCallchain {
		a.Bits |= attrExcludeCallchainU
	}
	if s.WakeupEvents != 0 {
		a.Wakeup = uint32(s.WakeupEvents)
	} else {
		a.Bits |= attrWatermark
		a.Wakeup = uint32(s.WakeupBytes)
	}
	return a
}

// cpuWideAttr builds the attributes of the sampling event of
// Options.SampleCPUWide on one CPU: every task, not inherited, without
// the side-band records (the per-task dummy event has them); enabled
// from the start for onExec targets, whose per-task events the exec
// enables (and unless StartDisabled), since a per-CPU event has no
// exec.
func (s *settings) cpuWideAttr(ev Event, onExec bool) unix.PerfEventAttr {
	a := s.attr(ev, true, false)
	a.Bits &^= attrMmap | attrMmap2 | attrComm | attrCommExec | attrTask | attrBuildID | attrContextSwitch | attrNamespaces
	if onExec && !s.StartDisabled {
		a.Bits &^= attrDisabled
	}
	return a
}

// dummyAttr builds the attributes of the per-task dummy event of
// Options.SampleCPUWide: it samples nothing and carries the side-band
// records of the followed tasks (MMAP, COMM, FORK, EXIT, SWITCH).
func (s *settings) dummyAttr(onExec bool) unix.PerfEventAttr {
	a := s.attr(s.Event, false, onExec)
	a.Type, a.Config = typeSoftware, configSWDummy
	a.Sample = 1
	a.Bits &^= attrFreq
	return a
}

// sidebandTracepoint returns the index in s.tpIDs of the tracepoint whose
// per-task event carries the side-band records of Options.SampleCPUWide
// instead of a dummy event: the first of StackTracepoints, else of
// UserStackTracepoints; -1 without.
func (s *settings) sidebandTracepoint() int {
	user := -1
	for i := range s.tpIDs {
		switch {
		case s.tpStack[i] && !s.tpUser[i]:
			return i
		case s.tpUser[i] && user < 0:
			user = i
		}
	}
	return user
}

// sidebandTracepointAttr builds the attributes of tracepoint i of
// sidebandTracepoint: its hits, and the records of dummyAttr.
func (s *settings) sidebandTracepointAttr(i int, onExec bool) unix.PerfEventAttr {
	const sideband = attrMmap | attrMmap2 | attrComm | attrCommExec | attrTask | attrBuildID | attrContextSwitch | attrNamespaces
	a := s.tracepointAttr(s.tpIDs[i], true, s.tpUser[i], false, onExec)
	a.Bits |= s.dummyAttr(onExec).Bits & sideband
	return a
}

// cpuWideTracepointAttr builds the attributes of a tracepoint of
// Options.CPUWideTracepoints on one CPU: every task, not inherited,
// without callchain; enabled from the start for onExec targets, as
// cpuWideAttr's event is.
func (s *settings) cpuWideTracepointAttr(id uint64, onExec bool) unix.PerfEventAttr {
	a := s.tracepointAttr(id, false, false, true, false)
	if onExec && !s.StartDisabled {
		a.Bits &^= attrDisabled
	}
	return a
}

// tracepointAttr builds the attributes of a tracepoint event that shares
// the main event's ring: the same sample layout, every hit sampled, no
// MMAP/COMM/task/switch records (the main event has them), and no
// callchain unless stack (a StackTracepoint) asks for the main event's,
// its user part only with userOnly (a UserStackTracepoint).
func (s *settings) tracepointAttr(id uint64, stack, userOnly, systemWide, onExec bool) unix.PerfEventAttr {
	a := s.attr(s.Event, systemWide, onExec)
	a.Type, a.Config = typeTracepoint, id
	a.Sample = 1
	a.Bits &^= attrFreq | attrMmap | attrMmap2 | attrComm | attrCommExec | attrTask | attrBuildID | attrExcludeIdle | attrContextSwitch | attrNamespaces
	if !stack {
		a.Bits |= attrExcludeCallchainK | attrExcludeCallchainU
	}
	if userOnly {
		a.Bits |= attrExcludeCallchainK
	}
	if stack && s.TracepointStack != 0 && s.TracepointStack < s.UserStack {
		a.Sample_stack_user = s.TracepointStack
	}
	return a
}
