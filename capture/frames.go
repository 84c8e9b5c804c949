package capture

import "math"

// FrameHeader holds the fields every frame carries. It is embedded in each
// frame struct.
type FrameHeader struct {
	// CPU is the CPU the event happened on, or -1 when unknown.
	CPU int16
	// PID is the process the frame belongs to, or -1 for the system.
	// FORK frames put the parent thread id here.
	PID int32
	// Time is in nanoseconds on the capture clock (CLOCK_MONOTONIC).
	Time int64
}

// Head returns the frame's common header, so every frame struct embedding a
// FrameHeader satisfies [Frame].
func (h *FrameHeader) Head() *FrameHeader { return h }

// Frame is one decoded frame. The concrete type is one of the pointer types
// listed in the package documentation, or [*Unknown]. Decoded frames hold
// nil, never empty, slices.
type Frame interface {
	// Type returns the frame's type as stored in the file.
	Type() FrameType
	// Head returns the common header fields.
	Head() *FrameHeader
}

// Timestamp (type 1) marks a point in time and carries nothing else.
type Timestamp struct {
	FrameHeader
}

// Sample (type 2) is one stack sample. Addrs are leaf first and may contain
// context markers such as [ContextKernel] and [ContextUser].
type Sample struct {
	FrameHeader
	TID   int32
	Addrs []uint64
}

// Trace (type 16) is a function entry or exit with its stack. A [Writer]
// without [WriterOptions.NewFrameTypes] stores it as a SAMPLE frame with the
// entering bit set, and reading that back yields a [Sample].
type Trace struct {
	FrameHeader
	TID      int32
	Entering bool
	Addrs    []uint64
}

// Map (type 3) is a memory mapping of a process. End is exclusive and Offset
// is the file offset of Start. BuildID, when not empty, is the lowercase hex
// build-id stored after the file name as "\x00@<hex>".
type Map struct {
	FrameHeader
	Start    uint64
	End      uint64
	Offset   uint64
	Inode    uint64
	Filename string
	BuildID  string
}

// Process (type 4) names a process: its argv joined by spaces, or its comm.
type Process struct {
	FrameHeader
	Cmdline string
}

// Fork (type 5) records a new task. Like Sysprof, nsprof writes the parent
// thread id as the frame PID and the new thread id as ChildPID, so thread
// creation produces FORK frames too.
type Fork struct {
	FrameHeader
	ChildPID int32
}

// Exit (type 6) records that process PID exited.
type Exit struct {
	FrameHeader
}

// JITEntry names one JIT address.
type JITEntry struct {
	Addr uint64
	Name string
}

// JITMap (type 7) names JIT addresses (those with [JITMapMark] set).
type JITMap struct {
	FrameHeader
	Entries []JITEntry
}

// CounterValue is the 8-byte union a counter value is stored in; the
// counter's [CounterType] says how to read it.
type CounterValue uint64

// IntValue returns a CounterValue holding v.
func IntValue(v int64) CounterValue { return CounterValue(v) }

// DoubleValue returns a CounterValue holding v.
func DoubleValue(v float64) CounterValue { return CounterValue(math.Float64bits(v)) }

// Int64 reads the value as an int64.
func (v CounterValue) Int64() int64 { return int64(v) }

// Double reads the value as a float64.
func (v CounterValue) Double() float64 { return math.Float64frombits(uint64(v)) }

// Float reads the value as a float64 according to typ.
func (v CounterValue) Float(typ CounterType) float64 {
	if typ == CounterDouble {
		return v.Double()
	}
	return float64(v.Int64())
}

// Counter is one counter definition. Category, Name and Description are
// truncated to 31, 31 and 51 bytes when written. ID must be in 1..[MaxCounterID];
// 0 is reserved.
type Counter struct {
	Category    string
	Name        string
	Description string
	ID          uint32
	Type        CounterType
	Value       CounterValue
}

// CounterDefine (type 8) defines counters.
type CounterDefine struct {
	FrameHeader
	Counters []Counter
}

// CounterUpdate is one new value of one counter.
type CounterUpdate struct {
	ID    uint32
	Value CounterValue
}

// CounterSet (type 9) sets counter values. On disk they are packed in groups
// of 8; empty slots (id 0) are dropped on read.
type CounterSet struct {
	FrameHeader
	Updates []CounterUpdate
}

// Mark (type 10) is an instant (Duration 0) or an interval starting at Time.
// Group and Name are truncated to 23 and 39 bytes when written.
type Mark struct {
	FrameHeader
	Duration int64
	Group    string
	Name     string
	Message  string
}

// End returns the time the mark ends.
func (m *Mark) End() int64 { return m.Time + m.Duration }

// Metadata (type 11) is a key (truncated to 39 bytes) and a value.
type Metadata struct {
	FrameHeader
	ID    string
	Value string
}

// Log severities, GLib's GLogLevelFlags values.
const (
	LogError    = 1 << 2
	LogCritical = 1 << 3
	LogWarning  = 1 << 4
	LogMessage  = 1 << 5
	LogInfo     = 1 << 6
	LogDebug    = 1 << 7
)

// Log (type 12) is a log message. Domain is truncated to 31 bytes.
type Log struct {
	FrameHeader
	Severity uint16
	Domain   string
	Message  string
}

// FileChunk (type 13) is part of an embedded file. A file is the data of
// the chunks with its path, in order, up to the first with IsLast; see
// [Files]. Path is truncated to 255 bytes when written.
type FileChunk struct {
	FrameHeader
	IsLast bool
	Path   string
	Data   []byte
}

// Allocation (type 14) is a memory allocation of Size bytes at Addr, or a
// free when Size is 0 and there is no stack (as Sysprof's memprof writes
// them). nsprof writes an allocation of 0 bytes (malloc(0)) with its
// stack, which Sysprof's viewer takes for a free.
type Allocation struct {
	FrameHeader
	Addr  uint64
	Size  int64
	TID   int32
	Addrs []uint64
}

// Overlay (type 15) says that for process PID, host directory Src is layer
// Layer of the overlay mounted at Dst inside the process.
type Overlay struct {
	FrameHeader
	Layer uint8
	Src   string
	Dst   string
}

// DBusMessage (type 17) is a raw D-Bus wire message seen on a bus.
type DBusMessage struct {
	FrameHeader
	BusType uint8
	Flags   uint16
	Message []byte
}

// Unknown is a frame of a type this package does not know, returned only
// when [ReaderOptions.AllowUnknown] is set. Data is everything after the
// 24-byte frame header, padding included.
type Unknown struct {
	FrameHeader
	RawType FrameType
	Data    []byte
}

// Type implementations.

// Type returns [TypeTimestamp].
func (*Timestamp) Type() FrameType { return TypeTimestamp }

// Type returns [TypeSample].
func (*Sample) Type() FrameType { return TypeSample }

// Type returns [TypeTrace].
func (*Trace) Type() FrameType { return TypeTrace }

// Type returns [TypeMap].
func (*Map) Type() FrameType { return TypeMap }

// Type returns [TypeProcess].
func (*Process) Type() FrameType { return TypeProcess }

// Type returns [TypeFork].
func (*Fork) Type() FrameType { return TypeFork }

// Type returns [TypeExit].
func (*Exit) Type() FrameType { return TypeExit }

// Type returns [TypeJITMap].
func (*JITMap) Type() FrameType { return TypeJITMap }

// Type returns [TypeCounterDefine].
func (*CounterDefine) Type() FrameType { return TypeCounterDefine }

// Type returns [TypeCounterSet].
func (*CounterSet) Type() FrameType { return TypeCounterSet }

// Type returns [TypeMark].
func (*Mark) Type() FrameType { return TypeMark }

// Type returns [TypeMetadata].
func (*Metadata) Type() FrameType { return TypeMetadata }

// Type returns [TypeLog].
func (*Log) Type() FrameType { return TypeLog }

// Type returns [TypeFileChunk].
func (*FileChunk) Type() FrameType { return TypeFileChunk }

// Type returns [TypeAllocation].
func (*Allocation) Type() FrameType { return TypeAllocation }

// Type returns [TypeOverlay].
func (*Overlay) Type() FrameType { return TypeOverlay }

// Type returns [TypeDBusMessage].
func (*DBusMessage) Type() FrameType { return TypeDBusMessage }

// Type returns the type stored in the file.
func (u *Unknown) Type() FrameType { return u.RawType }
