package capture

import (
	"encoding/binary"
	"fmt"
)

// The stacks of off-CPU intervals and blocking system calls (nsprof
// record --off-cpu, --blocking) are not SAMPLE frames: Sysprof counts
// every SAMPLE frame as a CPU sample in its callgraph (3.46 has no other
// kind of stack but ALLOCATION, which it shows as memory), so they would
// be CPU time there. They are records of the embedded file [StacksFile],
// which Sysprof ignores and nsprof's reports read as samples; Sysprof
// shows the intervals and calls as MARK frames ([OffCPUGroup],
// [BlockingGroup]).

// StacksFile is the embedded file holding stacks that are not CPU
// samples, as [AppendStack] encodes them: whole records in every chunk,
// so a file cut short (a killed recording) keeps the records before the
// cut.
const StacksFile = "__nsprof_stacks__"

// stackRecordFixed is the size of a [StackRecord] without its addresses.
const stackRecordFixed = 24

// MaxStackRecordAddrs is the most addresses of one [StackRecord]: a
// record fills at most one chunk of the file.
const MaxStackRecordAddrs = (fileChunkSize - stackRecordFixed) / 8

// StacksFileChunkData is the most data one chunk of a [StacksFile]
// holds.
const StacksFileChunkData = fileChunkSize

// StackRecord is one stack that is not a CPU sample: what a SAMPLE frame
// holds.
type StackRecord struct {
	Time     int64
	PID, TID int32
	CPU      int16
	// Addrs are the addresses leaf first, with context markers, as a
	// SAMPLE frame's.
	Addrs []uint64
}

// StackRecordSize returns the encoded size of a record of n addresses.
func StackRecordSize(n int) int { return stackRecordFixed + 8*n }

// AppendStack appends the encoding of r to b, little-endian: time
// (int64), pid and tid (int32), cpu (int16), the number of addresses
// (uint16), 4 zero bytes, then the addresses (uint64). Addresses past
// [MaxStackRecordAddrs] are left out.
func AppendStack(b []byte, r StackRecord) []byte {
	addrs := r.Addrs
	if len(addrs) > MaxStackRecordAddrs {
		addrs = addrs[:MaxStackRecordAddrs]
	}
	b = binary.LittleEndian.AppendUint64(b, uint64(r.Time))
	b = binary.LittleEndian.AppendUint32(b, uint32(r.PID))
	b = binary.LittleEndian.AppendUint32(b, uint32(r.TID))
	b = binary.LittleEndian.AppendUint16(b, uint16(r.CPU))
	b = binary.LittleEndian.AppendUint16(b, uint16(len(addrs)))
	b = append(b, 0, 0, 0, 0)
	for _, a := range addrs {
		b = binary.LittleEndian.AppendUint64(b, a)
	}
	return b
}

// DecodeStacks calls fn with each record of a [StacksFile]; r.Addrs is
// valid only during the call. A record cut short stops it with an error
// naming its offset, after the whole records before it.
func DecodeStacks(data []byte, fn func(r *StackRecord)) error {
	var r StackRecord
	for off := 0; off < len(data); {
		b := data[off:]
		if len(b) < stackRecordFixed {
			return fmt.Errorf("%s: %d bytes at offset %d are not a whole record", StacksFile, len(b), off)
		}
		n := int(binary.LittleEndian.Uint16(b[18:]))
		size := StackRecordSize(n)
		if len(b) < size {
			return fmt.Errorf("%s: record at offset %d: %d addresses, %d bytes left", StacksFile, off, n, len(b)-stackRecordFixed)
		}
		r.Time = int64(binary.LittleEndian.Uint64(b))
		r.PID = int32(binary.LittleEndian.Uint32(b[8:]))
		r.TID = int32(binary.LittleEndian.Uint32(b[12:]))
		r.CPU = int16(binary.LittleEndian.Uint16(b[16:]))
		r.Addrs = r.Addrs[:0]
		for i := range n {
			r.Addrs = append(r.Addrs, binary.LittleEndian.Uint64(b[stackRecordFixed+8*i:]))
		}
		fn(&r)
		off += size
	}
	return nil
}
