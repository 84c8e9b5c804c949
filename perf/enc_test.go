package perf

import "encoding/binary"

// enc builds records in native byte order for tests.
type enc struct{ b []byte }

func (e *enc) u16(v uint16) *enc { e.b = binary.NativeEndian.AppendUint16(e.b, v); return e }
func (e *enc) u32(v uint32) *enc { e.b = binary.NativeEndian.AppendUint32(e.b, v); return e }
func (e *enc) u64(v uint64) *enc { e.b = binary.NativeEndian.AppendUint64(e.b, v); return e }
func (e *enc) raw(b []byte) *enc { e.b = append(e.b, b...); return e }

// str appends s with a NUL, padded to 8 bytes as the kernel does.
func (e *enc) str(s string) *enc {
	e.b = append(e.b, s...)
	e.b = append(e.b, 0)
	for len(e.b)%8 != 0 {
		e.b = append(e.b, 0)
	}
	return e
}

// record prefixes body with a perf_event_header.
func record(typ RecordType, misc uint16, body []byte) []byte {
	e := &enc{}
	e.u32(uint32(typ)).u16(misc).u16(uint16(headerSize + len(body))).raw(body)
	return e.b
}

// testFormat is what Options{} produces, optionally with user stacks.
func testFormat(stack bool) Format {
	var o Options
	if stack {
		o.UserStack = 64
	}
	s, err := o.settings(4096, "amd64")
	if err != nil {
		panic(err)
	}
	return s.format()
}

// idTrailer encodes the sample_id_all trailer of testFormat: TID, TIME,
// CPU, IDENTIFIER.
func idTrailer(e *enc, pid, tid uint32, time uint64, cpu uint32, id uint64) *enc {
	return e.u32(pid).u32(tid).u64(time).u32(cpu).u32(0).u64(id)
}

// sampleRecord encodes a sample in testFormat(false).
func sampleRecord(pid, tid uint32, time uint64, chain []uint64) []byte {
	return record(RecordSample, MiscUser, sampleBody(pid, tid, time, chain).b)
}

// userSampleRecord encodes a sample in testFormat(true); nil regs means
// ABI none, an empty stack means size 0.
func userSampleRecord(pid, tid uint32, time uint64, chain []uint64, regs []uint64, stack []byte, dyn uint64) []byte {
	e := sampleBody(pid, tid, time, chain)
	if regs == nil {
		e.u64(RegsABINone)
	} else {
		e.u64(RegsABI64)
		for _, r := range regs {
			e.u64(r)
		}
	}
	e.u64(uint64(len(stack)))
	if len(stack) > 0 {
		e.raw(stack).u64(dyn)
	}
	return record(RecordSample, MiscUser, e.b)
}

func sampleBody(pid, tid uint32, time uint64, chain []uint64) *enc {
	e := &enc{}
	e.u64(7).u64(0x401000).u32(pid).u32(tid).u64(time).u32(1).u32(0).u64(1000000)
	e.u64(uint64(len(chain)))
	for _, a := range chain {
		e.u64(a)
	}
	return e
}
