package capture

import (
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"
)

// Off-CPU time (nsprof record --off-cpu) is stored so that Sysprof
// shows it without counting it as CPU time: each interval a thread spent
// off the CPU is a record of the embedded file [StacksFile] at the time
// the thread left the CPU, with the thread's kernel and user stack at
// that moment behind a leaf frame naming why it left (a JIT address,
// [OffCPUMarker]: "[off-CPU: S sleeping]"), and its duration is a record
// of the embedded file [OffCPUFile], keyed by the thread and time. An
// interval of at least the recording's mark threshold
// ([MetaOffCPUMarkNs]) is also a MARK frame of group [OffCPUGroup], named
// after the state ([OffCPUMarkName]), with its duration and the thread in
// its message ([OffCPUMarkMessage]): Sysprof shows those in its timeline
// and marks list. nsprof weighs the stacks by duration. Captures of
// earlier nsprof versions hold the stacks as SAMPLE frames; nsprof reads
// those the same way.

// OffCPUGroup is the group of the marks of off-CPU intervals.
const OffCPUGroup = "off-cpu"

// OffCPUMarkName returns the name of the marks of intervals a thread
// spent off the CPU in state: "S sleeping".
func OffCPUMarkName(state byte) string {
	if state < 0x21 || state > 0x7e {
		state = '?'
	}
	return string(rune(state)) + " " + OffCPUStateName(state)
}

// OffCPUMarkMessage returns the message of an off-CPU mark of thread
// tid: "tid 1234" (a MARK frame has a process, not a thread).
func OffCPUMarkMessage(tid int32) string { return "tid " + strconv.Itoa(int(tid)) }

// OffCPUFile is the embedded file holding the off-CPU intervals, as
// [EncodeOffCPU] writes them: whole records in every chunk, so a file
// cut short (a killed recording) keeps the records before the cut.
const OffCPUFile = "__nsprof_offcpu__"

// MetaOffCPU is "1" when off-CPU time was recorded; the other keys count
// what could not be (see [OffCPUStats]).
const (
	MetaOffCPU          = "nsprof.offcpu"
	MetaOffCPUIntervals = "nsprof.offcpu.intervals"
	MetaOffCPUUnpaired  = "nsprof.offcpu.unpaired"
	MetaOffCPUOpen      = "nsprof.offcpu.open"
	// MetaOffCPUBySample counts the intervals whose switch in was never
	// seen, the thread leaving a CPU again later, that end at the
	// thread's first CPU sample after the switch out instead (it was
	// back on a CPU by then: within a sampling period of its switch
	// in); they are in MetaOffCPUIntervals, not MetaOffCPUUnpaired.
	MetaOffCPUBySample = "nsprof.offcpu.by-sample"
	// MetaOffCPUMarkNs is the shortest interval written as a mark, in
	// nanoseconds; MetaOffCPUUnmarked counts the intervals shorter than
	// that (in StacksFile and OffCPUFile, not marks).
	MetaOffCPUMarkNs   = "nsprof.offcpu.mark-ns"
	MetaOffCPUUnmarked = "nsprof.offcpu.unmarked"
	// MetaOffCPUSwitchIns says where the switch-ins that end the
	// intervals came from: [OffCPUSwitchInsBPF] or [OffCPUSwitchInsPerf];
	// MetaOffCPUSwitchInsLost counts those the BPF program lost to a
	// full ring buffer (their intervals count as unpaired).
	MetaOffCPUSwitchIns     = "nsprof.offcpu.switch-ins"
	MetaOffCPUSwitchInsLost = "nsprof.offcpu.switch-ins-lost"
	// MetaOffCPUKernelReused counts the intervals whose kernel stack
	// the BPF program walked at an earlier switch out of the thread at
	// the same place and reused (it walks it afresh at least every
	// [OffCPUKernelStackReuse]th), MetaOffCPUNoKernel those it gave no
	// kernel stack; both only when the kernel stacks came from it.
	MetaOffCPUKernelReused = "nsprof.offcpu.kernel-reused"
	MetaOffCPUNoKernel     = "nsprof.offcpu.no-kernel"
)

// OffCPUKernelStackReuse is how many switch outs in a row of a thread at
// one place the recorder's BPF program gives the kernel stack it walked
// at the first of them ([MetaOffCPUKernelReused]).
const OffCPUKernelStackReuse = 16

// OffCPUUntracedHint says why intervals recorded with switch-ins from
// the BPF program ([OffCPUSwitchInsBPF]) end at a CPU sample
// ([MetaOffCPUBySample]), and what records them otherwise: the program
// runs on the sched_switch tracepoint, which some kernels do not fire
// for some tasks' switches (one seen: none when a thread of the
// sandbox's init process left a CPU), while the SWITCH records come from
// perf's own scheduler hooks. For the recorder's log and the reports'
// warnings alike.
const OffCPUUntracedHint = "their switch in was not reported by the kernel's sched_switch tracepoint (some kernels do not trace some tasks' switches): --off-cpu-switch-ins=perf takes the switch-ins from SWITCH records"

// The values of [MetaOffCPUSwitchIns]: a BPF program on the sched_switch
// raw tracepoint, or perf's SWITCH records (context_switch), the
// fallback.
const (
	OffCPUSwitchInsBPF  = "bpf"
	OffCPUSwitchInsPerf = "perf"
)

// OffCPURecordSize is the size of one encoded [OffCPU] record.
const OffCPURecordSize = 24

// OffCPU is one interval a thread spent off the CPU.
type OffCPU struct {
	// TID is the thread (host id); Time the switch out, on the capture
	// clock; Duration the nanoseconds until it ran again.
	TID      int32
	Time     int64
	Duration int64
	// State is the task state the thread left the CPU in, as the
	// kernel's sched_switch event prints it: 'S' sleeping, 'D'
	// uninterruptible (usually disk I/O), 'R' preempted, 'T' stopped,
	// 't' traced, 'P' parked, 'I' idle, 'X' dead, '?' unknown.
	State byte
}

// AppendOffCPU appends the encoding of r to b: tid (int32), state, 3
// zero bytes, time and duration (int64), little-endian.
func AppendOffCPU(b []byte, r OffCPU) []byte {
	b = binary.LittleEndian.AppendUint32(b, uint32(r.TID))
	b = append(b, r.State, 0, 0, 0)
	b = binary.LittleEndian.AppendUint64(b, uint64(r.Time))
	return binary.LittleEndian.AppendUint64(b, uint64(r.Duration))
}

// DecodeOffCPU decodes the records of an [OffCPUFile]. A file whose size
// is not a whole number of records returns the whole ones and an error
// naming the offset of the rest; so does a record with a negative
// duration.
func DecodeOffCPU(data []byte) ([]OffCPU, error) {
	out := make([]OffCPU, 0, len(data)/OffCPURecordSize)
	for off := 0; off+OffCPURecordSize <= len(data); off += OffCPURecordSize {
		b := data[off:]
		r := OffCPU{
			TID:      int32(binary.LittleEndian.Uint32(b)),
			State:    b[4],
			Time:     int64(binary.LittleEndian.Uint64(b[8:])),
			Duration: int64(binary.LittleEndian.Uint64(b[16:])),
		}
		if r.Duration < 0 {
			return out, fmt.Errorf("%s: record at offset %d: negative duration %d", OffCPUFile, off, r.Duration)
		}
		out = append(out, r)
	}
	if n := len(data) % OffCPURecordSize; n != 0 {
		return out, fmt.Errorf("%s: %d bytes at offset %d are not a whole %d-byte record", OffCPUFile, n, len(data)-n, OffCPURecordSize)
	}
	return out, nil
}

// offCPUStates names the task states, by [OffCPU.State].
var offCPUStates = map[byte]string{
	'S': "sleeping", 'D': "uninterruptible", 'R': "preempted", 'T': "stopped", 't': "traced",
	'P': "parked", 'I': "idle", 'X': "dead", 'Z': "zombie",
}

// OffCPUStateName returns the word for state ("sleeping" for 'S'), or
// "unknown".
func OffCPUStateName(state byte) string {
	if n, ok := offCPUStates[state]; ok {
		return n
	}
	return "unknown"
}

// offCPUMarkerPrefix starts the name of every off-CPU marker frame.
const offCPUMarkerPrefix = "[off-CPU: "

// OffCPUMarker returns the name of the leaf frame of the off-CPU samples
// of a thread that left the CPU in state: "[off-CPU: S sleeping]".
func OffCPUMarker(state byte) string {
	if state < 0x21 || state > 0x7e {
		state = '?'
	}
	return offCPUMarkerPrefix + string(rune(state)) + " " + OffCPUStateName(state) + "]"
}

// IsOffCPUMarker reports whether name is an [OffCPUMarker].
func IsOffCPUMarker(name string) bool { return strings.HasPrefix(name, offCPUMarkerPrefix) }

// OffCPUFileChunkData is the most data one chunk of an [OffCPUFile]
// holds: whole records filling a 16 KiB frame.
const OffCPUFileChunkData = fileChunkSize / OffCPURecordSize * OffCPURecordSize

// AddFileChunk writes one FILE_CHUNK of the file at path, the last one
// when last is set: for a file written while recording, piece by piece.
// data must fit one frame (16 KiB less the chunk's header).
func (w *Writer) AddFileChunk(h FrameHeader, path string, data []byte, last bool) error {
	if len(data) > fileChunkSize {
		return fmt.Errorf("file chunk of %s: %d bytes, at most %d: %w", path, len(data), fileChunkSize, ErrFrameTooLarge)
	}
	return w.writeFileChunk(&FileChunk{FrameHeader: h, Path: path, Data: data, IsLast: last})
}
