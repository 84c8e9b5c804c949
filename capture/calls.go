package capture

import (
	"encoding/binary"
	"fmt"
)

// Calls of instrumented code (nsprof record --calls: code built with -pg
// or -finstrument-functions, counted by the preload library) have no
// Sysprof frame type: they are records of the embedded file [CallsFile],
// which Sysprof ignores as it ignores any file it does not know. Each
// record sums the calls of one arc, from a call site to a function, that
// one thread made between two writes of its table; an arc's calls are
// the sum of its records.

// CallsFile is the embedded file holding the call arcs, as [AppendCall]
// writes them: whole records in every chunk, so a file cut short keeps
// the records before the cut.
const CallsFile = "__nsprof_calls__"

// Metadata of a recording with --calls: MetaCalls is "1"; the others
// count the arc records written, the calls the preload could not record
// (made by threads still running at exit, or after their thread's last
// write, rings full, signal handlers) and those it counted without their
// time (nested deeper than its shadow stack).
const (
	MetaCalls        = "nsprof.calls"
	MetaCallsArcs    = "nsprof.calls.arcs"
	MetaCallsLost    = "nsprof.calls.lost"
	MetaCallsUntimed = "nsprof.calls.untimed"
)

// CallRecordSize is the size of one encoded [Call] record.
const CallRecordSize = 64

// CallsFileChunkData is the most data one chunk of a [CallsFile] holds:
// whole records filling a 16 KiB frame.
const CallsFileChunkData = fileChunkSize / CallRecordSize * CallRecordSize

// Call is the calls of one arc by one thread over a stretch of time.
type Call struct {
	// PID and TID are host ids; Time is when the thread wrote the
	// record, on the capture clock.
	PID, TID int32
	Time     int64
	// Callee is an address in the called function: its entry
	// (-finstrument-functions) or the return address of its mcount
	// call (-pg). Site is the return address in the caller.
	Callee, Site uint64
	// Count is the number of calls; Total and Self their time and the
	// part not spent in instrumented callees, in nanoseconds, when Timed
	// (-finstrument-functions; -pg counts only).
	Count       int64
	Total, Self int64
	Timed       bool
}

// callTimed is the flag of a [Call] whose Total and Self are measured.
const callTimed = 1

// AppendCall appends the encoding of r to b, little-endian: pid, tid
// (int32), time (int64), callee, site (uint64), count, total, self
// (int64), flags (uint32: 1 timed) and 4 zero bytes.
func AppendCall(b []byte, r Call) []byte {
	b = binary.LittleEndian.AppendUint32(b, uint32(r.PID))
	b = binary.LittleEndian.AppendUint32(b, uint32(r.TID))
	b = binary.LittleEndian.AppendUint64(b, uint64(r.Time))
	b = binary.LittleEndian.AppendUint64(b, r.Callee)
	b = binary.LittleEndian.AppendUint64(b, r.Site)
	b = binary.LittleEndian.AppendUint64(b, uint64(r.Count))
	b = binary.LittleEndian.AppendUint64(b, uint64(r.Total))
	b = binary.LittleEndian.AppendUint64(b, uint64(r.Self))
	var flags uint32
	if r.Timed {
		flags |= callTimed
	}
	b = binary.LittleEndian.AppendUint32(b, flags)
	return binary.LittleEndian.AppendUint32(b, 0)
}

// DecodeCalls decodes the records of a [CallsFile]. It stops at the
// first bad record (a negative count or time, a self time above the
// total, unknown flags) with an error naming its offset, returning the
// records before it; a file whose size is not a whole number of records
// returns the whole ones and an error naming the offset of the rest.
func DecodeCalls(data []byte) ([]Call, error) {
	out := make([]Call, 0, len(data)/CallRecordSize)
	for off := 0; off+CallRecordSize <= len(data); off += CallRecordSize {
		b := data[off : off+CallRecordSize]
		flags := binary.LittleEndian.Uint32(b[56:])
		r := Call{
			PID:    int32(binary.LittleEndian.Uint32(b)),
			TID:    int32(binary.LittleEndian.Uint32(b[4:])),
			Time:   int64(binary.LittleEndian.Uint64(b[8:])),
			Callee: binary.LittleEndian.Uint64(b[16:]),
			Site:   binary.LittleEndian.Uint64(b[24:]),
			Count:  int64(binary.LittleEndian.Uint64(b[32:])),
			Total:  int64(binary.LittleEndian.Uint64(b[40:])),
			Self:   int64(binary.LittleEndian.Uint64(b[48:])),
			Timed:  flags&callTimed != 0,
		}
		var bad string
		switch {
		case flags&^callTimed != 0 || binary.LittleEndian.Uint32(b[60:]) != 0:
			bad = fmt.Sprintf("unknown flags %#x", flags)
		case r.Count < 0:
			bad = fmt.Sprintf("negative count %d", r.Count)
		case r.Total < 0 || r.Self < 0:
			bad = fmt.Sprintf("negative time %d (self %d)", r.Total, r.Self)
		case r.Self > r.Total:
			bad = fmt.Sprintf("self time %d above the total %d", r.Self, r.Total)
		case !r.Timed && (r.Total != 0 || r.Self != 0):
			bad = "time in an untimed record"
		}
		if bad != "" {
			return out, fmt.Errorf("%s: record at offset %d: %s", CallsFile, off, bad)
		}
		out = append(out, r)
	}
	if n := len(data) % CallRecordSize; n != 0 {
		return out, fmt.Errorf("%s: %d bytes at offset %d are not a whole %d-byte record", CallsFile, n, len(data)-n, CallRecordSize)
	}
	return out, nil
}
