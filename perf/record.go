package perf

// Record is one decoded perf record. Type says which of the embedded
// structs is valid; the others keep stale values from earlier records.
//
// A Record is meant to be reused: [Reader.ReadInto] and [DecodeRecord]
// overwrite it in place and reuse the capacity of its slices, so the slices
// (callchain, registers, stack, names, Raw) are only valid until the next
// call that decodes into the same Record. Copy what must outlive it.
type Record struct {
	// Type is the record type. After an error it is RecordNone.
	Type RecordType
	// Misc is perf_event_header.misc: the CPU mode (MiscCPUModeMask) and
	// per-type flags such as MiscCommExec and MiscMmapBuildID.
	Misc uint16
	// CPU is the CPU whose ring buffer held the record, or -1 when the
	// record did not come from a [Reader].
	CPU int

	Sample      Sample      // RecordSample
	Mmap        Mmap        // RecordMmap and RecordMmap2
	Comm        Comm        // RecordComm
	Task        Task        // RecordFork and RecordExit
	Lost        Lost        // RecordLost
	Throttle    Throttle    // RecordThrottle and RecordUnthrottle
	LostSamples LostSamples // RecordLostSamples
	Switch      Switch      // RecordSwitchCPUWide
	Namespaces  Namespaces  // RecordNamespaces

	// ID is the sample_id_all trailer of any record other than a sample,
	// when the events were opened with it ([Format.SampleIDAll]); only the
	// fields selected by [Format.SampleType] are set. [Record.Time] and
	// [Record.PIDTID] also work for samples.
	ID SampleID

	// Raw holds the whole record, header included, for types this package
	// does not decode. It is empty for decoded types.
	Raw []byte
}

// Sample is a PERF_RECORD_SAMPLE. Fields whose PERF_SAMPLE_* bit was not
// requested are zero.
type Sample struct {
	Identifier uint64 // PERF_SAMPLE_IDENTIFIER
	IP         uint64 // PERF_SAMPLE_IP
	PID, TID   uint32 // PERF_SAMPLE_TID
	Time       uint64 // PERF_SAMPLE_TIME, in the event's clock (CLOCK_MONOTONIC ns)
	Addr       uint64 // PERF_SAMPLE_ADDR
	ID         uint64 // PERF_SAMPLE_ID
	StreamID   uint64 // PERF_SAMPLE_STREAM_ID
	CPU        uint32 // PERF_SAMPLE_CPU
	Period     uint64 // PERF_SAMPLE_PERIOD

	// Callchain holds the addresses, innermost first, interleaved with
	// Context* markers (PERF_SAMPLE_CALLCHAIN).
	Callchain []uint64

	// RegsABI is one of RegsABI*; Regs holds one value per bit set in
	// [Format.RegsUser], in ascending bit order, when RegsABI is not
	// RegsABINone (PERF_SAMPLE_REGS_USER). Use [Format.UserReg].
	RegsABI uint64
	Regs    []uint64

	// Stack holds the valid part of the user stack copy, starting at the
	// user stack pointer (PERF_SAMPLE_STACK_USER). StackSize is the size
	// the kernel reserved in the record, of which the first len(Stack)
	// bytes (dyn_size) were filled.
	Stack     []byte
	StackSize uint64

	Cgroup uint64 // PERF_SAMPLE_CGROUP: the cgroup2 id

	// RawData is the tracepoint's data (PERF_SAMPLE_RAW), with the kernel's
	// padding, when the reader has [Options.Tracepoints]. Its first two bytes
	// are the tracepoint's id (common_type); see [Tracepoint]. Samples of
	// the main event carry 4 zero bytes.
	RawData []byte
}

// Mmap is a PERF_RECORD_MMAP or PERF_RECORD_MMAP2 (executable mappings,
// and data mappings when asked for).
type Mmap struct {
	PID, TID uint32
	Addr     uint64 // start address
	Len      uint64
	PgOff    uint64 // file offset

	// MMAP2 only. When Misc has MiscMmapBuildID, BuildID[:BuildIDSize]
	// identifies the file and Maj, Min, Ino and InoGeneration are zero.
	Maj, Min      uint32
	Ino           uint64
	InoGeneration uint64
	BuildIDSize   uint8
	BuildID       [20]byte
	Prot, Flags   uint32

	// Filename is the path as the mapping process saw it, without the
	// terminating NUL bytes. Anonymous and special mappings use names like
	// "//anon" and "[vdso]".
	Filename []byte
}

// BuildIDBytes returns the build ID carried by an MMAP2 record, or nil.
func (m *Mmap) BuildIDBytes() []byte {
	if m.BuildIDSize == 0 {
		return nil
	}
	return m.BuildID[:m.BuildIDSize]
}

// Comm is a PERF_RECORD_COMM: a task's name changed.
type Comm struct {
	PID, TID uint32
	// Comm is the new name, without the terminating NUL bytes.
	Comm []byte
	// Exec reports that the name changed because of execve
	// (MiscCommExec).
	Exec bool
}

// Task is a PERF_RECORD_FORK or PERF_RECORD_EXIT. For FORK, PID/TID is
// the new task and PPID/PTID its parent; a new thread has PID == PPID.
type Task struct {
	PID, PPID uint32
	TID, PTID uint32
	Time      uint64
}

// Lost is a PERF_RECORD_LOST: the ring was full and Lost records of event
// ID were dropped.
type Lost struct {
	ID   uint64
	Lost uint64
}

// Throttle is a PERF_RECORD_THROTTLE or PERF_RECORD_UNTHROTTLE: the kernel
// stopped or resumed sampling because the interrupt rate was too high.
type Throttle struct {
	Time     uint64
	ID       uint64
	StreamID uint64
}

// LostSamples is a PERF_RECORD_LOST_SAMPLES: samples dropped before they
// reached the ring.
type LostSamples struct {
	Lost uint64
}

// Switch is the body of a PERF_RECORD_SWITCH_CPU_WIDE: the task switched
// to (on a switch out) or from (on a switch in).
type Switch struct {
	NextPrevPID, NextPrevTID uint32
}

// Namespaces is a PERF_RECORD_NAMESPACES: the namespaces of task TID of
// process PID (ids in the recorder's PID namespace), each the device and
// inode of its /proc/PID/ns file, indexed by NamespaceNet and the others.
// Count is how many the record held: the kernel's seven since Linux 4.12;
// a record of fewer leaves the others zero, one of more has them dropped.
type Namespaces struct {
	PID, TID uint32
	Count    uint64
	Links    [NamespaceCount]NamespaceLink
}

// NamespaceLink identifies a namespace as stat(2) of its /proc/PID/ns
// file does.
type NamespaceLink struct {
	Dev, Inode uint64
}

// Indexes of [Namespaces.Links], the kernel's *_NS_INDEX.
const (
	NamespaceNet = iota
	NamespaceUTS
	NamespaceIPC
	NamespacePID
	NamespaceUser
	NamespaceMnt
	NamespaceCgroup
	NamespaceCount
)

// SampleID is the sample_id_all trailer of a non-sample record.
type SampleID struct {
	PID, TID   uint32
	Time       uint64
	ID         uint64
	StreamID   uint64
	CPU        uint32
	Identifier uint64
}

// Time returns the timestamp of the record: the sample's time, or the
// sample_id_all trailer's time. It is 0 when PERF_SAMPLE_TIME is off or
// the record carries none.
func (r *Record) Time() uint64 {
	if r.Type == RecordSample {
		return r.Sample.Time
	}
	return r.ID.Time
}

// PIDTID returns the process and thread a record is about: the sampled
// task, or the task in the record body for MMAP, COMM, FORK and EXIT, or
// the sample_id_all trailer's task for other records.
func (r *Record) PIDTID() (pid, tid uint32) {
	switch r.Type {
	case RecordSample:
		return r.Sample.PID, r.Sample.TID
	case RecordMmap, RecordMmap2:
		return r.Mmap.PID, r.Mmap.TID
	case RecordComm:
		return r.Comm.PID, r.Comm.TID
	case RecordFork, RecordExit:
		return r.Task.PID, r.Task.TID
	}
	return r.ID.PID, r.ID.TID
}
