package perf

import "strconv"

// RecordType is the type field of a perf_event_header (PERF_RECORD_*).
type RecordType uint32

// Record types decoded by [DecodeRecord]. Other types are returned with
// their raw bytes in [Record.Raw].
const (
	RecordNone        RecordType = 0 // no record: the zero value, and the state after an error
	RecordMmap        RecordType = 1
	RecordLost        RecordType = 2
	RecordComm        RecordType = 3
	RecordExit        RecordType = 4
	RecordThrottle    RecordType = 5
	RecordUnthrottle  RecordType = 6
	RecordFork        RecordType = 7
	RecordSample      RecordType = 9
	RecordMmap2       RecordType = 10
	RecordLostSamples RecordType = 13
	// RecordSwitch is a task's context switch, in or out ([MiscSwitchOut]),
	// written for events opened with [Options.ContextSwitch]; the task and
	// time are in [Record.ID].
	RecordSwitch RecordType = 14
	// RecordSwitchCPUWide is a context switch seen by a system-wide
	// event: [Record.Switch] names the other task.
	RecordSwitchCPUWide RecordType = 15
	// RecordNamespaces gives a task's namespaces, written for events
	// opened with [Options.Namespaces] when a task is created and when
	// one enters or leaves a namespace (unshare, setns).
	RecordNamespaces RecordType = 16
)

var recordNames = [...]string{
	RecordNone:          "NONE",
	RecordMmap:          "MMAP",
	RecordLost:          "LOST",
	RecordComm:          "COMM",
	RecordExit:          "EXIT",
	RecordThrottle:      "THROTTLE",
	RecordUnthrottle:    "UNTHROTTLE",
	RecordFork:          "FORK",
	8:                   "READ",
	RecordSample:        "SAMPLE",
	RecordMmap2:         "MMAP2",
	11:                  "AUX",
	12:                  "ITRACE_START",
	RecordLostSamples:   "LOST_SAMPLES",
	RecordSwitch:        "SWITCH",
	RecordSwitchCPUWide: "SWITCH_CPU_WIDE",
	RecordNamespaces:    "NAMESPACES",
	17:                  "KSYMBOL",
	18:                  "BPF_EVENT",
	19:                  "CGROUP",
	20:                  "TEXT_POKE",
	21:                  "AUX_OUTPUT_HW_ID",
	22:                  "CALLCHAIN_DEFERRED",
}

// String returns the kernel's name without the PERF_RECORD_ prefix.
func (t RecordType) String() string {
	if int(t) < len(recordNames) && recordNames[t] != "" {
		return recordNames[t]
	}
	return "RecordType(" + strconv.FormatUint(uint64(t), 10) + ")"
}

// Bits of perf_event_header.misc.
const (
	MiscCPUModeMask = 0x7 // PERF_RECORD_MISC_CPUMODE_MASK
	MiscKernel      = 0x1 // PERF_RECORD_MISC_KERNEL
	MiscUser        = 0x2 // PERF_RECORD_MISC_USER
	MiscHypervisor  = 0x3 // PERF_RECORD_MISC_HYPERVISOR
	MiscMmapData    = 0x2000
	MiscCommExec    = 0x2000 // on COMM: the name changed because of exec
	MiscMmapBuildID = 0x4000 // on MMAP2: build ID instead of device and inode
	MiscExactIP     = 0x4000 // on SAMPLE
	// MiscSwitchOut marks a SWITCH record of a task leaving the CPU
	// (none: a task coming back); MiscSwitchOutPreempt says it was
	// still runnable (preempted).
	MiscSwitchOut        = 0x2000
	MiscSwitchOutPreempt = 0x4000
)

// Markers in a callchain that say which context the following addresses
// belong to (PERF_CONTEXT_*). They are above every valid address.
const (
	ContextHypervisor  = ^uint64(0x20 - 1)  // PERF_CONTEXT_HV, -32
	ContextKernel      = ^uint64(0x80 - 1)  // PERF_CONTEXT_KERNEL, -128
	ContextUser        = ^uint64(0x200 - 1) // PERF_CONTEXT_USER, -512
	ContextGuestKernel = ^uint64(0x880 - 1)
	ContextGuestUser   = ^uint64(0xa00 - 1)
	ContextMax         = ^uint64(0xfff - 1) // addresses >= ContextMax are markers
)

// Sample-type bits (PERF_SAMPLE_*) that [Format] understands.
const (
	sampleIP         = 1 << 0
	sampleTID        = 1 << 1
	sampleTime       = 1 << 2
	sampleAddr       = 1 << 3
	sampleRead       = 1 << 4
	sampleCallchain  = 1 << 5
	sampleID         = 1 << 6
	sampleCPU        = 1 << 7
	samplePeriod     = 1 << 8
	sampleStreamID   = 1 << 9
	sampleRaw        = 1 << 10
	sampleRegsUser   = 1 << 12
	sampleStackUser  = 1 << 13
	sampleIdentifier = 1 << 16
	sampleCgroup     = 1 << 21

	sampleSupported = sampleIP | sampleTID | sampleTime | sampleAddr | sampleCallchain |
		sampleID | sampleCPU | samplePeriod | sampleStreamID | sampleRegsUser |
		sampleStackUser | sampleIdentifier | sampleCgroup | sampleRaw
)

// Flag bits of perf_event_attr (the bitfield after read_format). x/sys/unix
// stops at bit 27, so they are all spelled out here.
const (
	attrDisabled          = 1 << 0
	attrInherit           = 1 << 1
	attrExcludeKernel     = 1 << 5
	attrExcludeHV         = 1 << 6
	attrExcludeIdle       = 1 << 7
	attrMmap              = 1 << 8
	attrComm              = 1 << 9
	attrFreq              = 1 << 10
	attrEnableOnExec      = 1 << 12
	attrTask              = 1 << 13
	attrWatermark         = 1 << 14
	attrSampleIDAll       = 1 << 18
	attrExcludeCallchainK = 1 << 21
	attrExcludeCallchainU = 1 << 22
	attrMmap2             = 1 << 23
	attrCommExec          = 1 << 24
	attrUseClockID        = 1 << 25
	attrContextSwitch     = 1 << 26
	attrNamespaces        = 1 << 28
	attrBuildID           = 1 << 34
)

// Event types and configs (PERF_TYPE_*, PERF_COUNT_*).
const (
	typeHardware            = 0
	typeSoftware            = 1
	typeTracepoint          = 2
	configHWCycles          = 0 // PERF_COUNT_HW_CPU_CYCLES
	configHWInstructions    = 1 // PERF_COUNT_HW_INSTRUCTIONS
	configHWCacheMisses     = 3 // PERF_COUNT_HW_CACHE_MISSES
	configHWBranchMisses    = 5 // PERF_COUNT_HW_BRANCH_MISSES
	configSWCPUClock        = 0 // PERF_COUNT_SW_CPU_CLOCK
	configSWTaskClock       = 1 // PERF_COUNT_SW_TASK_CLOCK
	configSWPageFaults      = 2 // PERF_COUNT_SW_PAGE_FAULTS
	configSWContextSwitches = 3 // PERF_COUNT_SW_CONTEXT_SWITCHES
	configSWDummy           = 9 // PERF_COUNT_SW_DUMMY
)

// Offsets in struct perf_event_mmap_page.
const (
	metaDataHead   = 1024
	metaDataTail   = 1032
	metaDataOffset = 1040
	metaDataSize   = 1048
	metaMinSize    = 1056
)

// headerSize is sizeof(struct perf_event_header).
const headerSize = 8

// maxBuildID is the size of the build ID field in an MMAP2 record.
const maxBuildID = 20
