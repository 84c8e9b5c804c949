package perf

import (
	"encoding/binary"
	"fmt"
	"math/bits"
)

// Format holds the perf_event_attr fields that decide how records are laid
// out. All events whose records share a ring must have the same Format.
type Format struct {
	// SampleType is perf_event_attr.sample_type (PERF_SAMPLE_* bits).
	SampleType uint64
	// RegsUser is perf_event_attr.sample_regs_user.
	RegsUser uint64
	// SampleIDAll is perf_event_attr.sample_id_all: non-sample records end
	// with a [SampleID] trailer.
	SampleIDAll bool
}

// check reports sample-type bits the decoder cannot skip.
func (f Format) check() error {
	if extra := f.SampleType &^ sampleSupported; extra != 0 {
		return fmt.Errorf("unsupported sample_type bits %#x", extra)
	}
	return nil
}

// rawTime returns the time of the encoded record raw, from a sample's
// body or another record's sample_id trailer; 0 when the format records
// no time or raw is too short to hold it.
func (f Format) rawTime(raw []byte) uint64 {
	if f.SampleType&sampleTime == 0 || len(raw) < headerSize {
		return 0
	}
	var off int
	if RecordType(binary.NativeEndian.Uint32(raw)) == RecordSample {
		off = headerSize + 8*bits.OnesCount64(f.SampleType&(sampleIdentifier|sampleIP|sampleTID))
	} else {
		if !f.SampleIDAll {
			return 0
		}
		off = len(raw) - f.idSize()
		if f.SampleType&sampleTID != 0 {
			off += 8
		}
	}
	if off < headerSize || off+8 > len(raw) {
		return 0
	}
	return binary.NativeEndian.Uint64(raw[off:])
}

// idSize is the size of the sample_id_all trailer.
func (f Format) idSize() int {
	if !f.SampleIDAll {
		return 0
	}
	const idBits = sampleTID | sampleTime | sampleID | sampleStreamID | sampleCPU | sampleIdentifier
	return 8 * bits.OnesCount64(f.SampleType&idBits)
}

// FormatError reports a malformed record. It never wraps another error.
type FormatError struct {
	// CPU is the CPU of the ring the record came from, or -1.
	CPU int
	// Offset is the record's byte offset in the CPU's ring data area, or
	// 0 when the record did not come from a ring.
	Offset uint64
	// Type is the record type from the header, if one could be read.
	Type RecordType
	// Msg says what is wrong, including the offending values.
	Msg string
}

// Error describes the record's place and the problem.
func (e *FormatError) Error() string {
	return fmt.Sprintf("perf record at cpu %d offset %#x: %v: %s", e.CPU, e.Offset, e.Type, e.Msg)
}

// cursor reads native-endian values from b. Reads past the end return
// zero and set short; callers check short before trusting what they read.
type cursor struct {
	b     []byte
	off   int
	short bool
}

func (c *cursor) left() int { return len(c.b) - c.off }

func (c *cursor) u64() uint64 {
	if c.left() < 8 {
		c.short, c.off = true, len(c.b)
		return 0
	}
	v := binary.NativeEndian.Uint64(c.b[c.off:])
	c.off += 8
	return v
}

func (c *cursor) u32() uint32 {
	if c.left() < 4 {
		c.short, c.off = true, len(c.b)
		return 0
	}
	v := binary.NativeEndian.Uint32(c.b[c.off:])
	c.off += 4
	return v
}

// bytes returns the next n bytes, or nil and short if there are fewer.
func (c *cursor) bytes(n uint64) []byte {
	if uint64(c.left()) < n {
		c.short, c.off = true, len(c.b)
		return nil
	}
	b := c.b[c.off : c.off+int(n)]
	c.off += int(n)
	return b
}

// cstring returns the rest of the buffer up to the first NUL byte.
func (c *cursor) cstring() []byte {
	rest := c.b[c.off:]
	c.off = len(c.b)
	for i, ch := range rest {
		if ch == 0 {
			return rest[:i]
		}
	}
	return rest
}

// DecodeRecord decodes raw, one whole record starting with its
// perf_event_header, into rec, reusing rec's slices. Nothing in rec refers
// to raw afterwards. On error, which is always a *[FormatError] naming CPU
// -1, rec.Type is RecordNone.
func DecodeRecord(rec *Record, raw []byte, f Format) error {
	if err := decode(rec, raw, f); err != nil {
		rec.Type = RecordNone
		err.CPU = -1
		return err
	}
	return nil
}

func decode(rec *Record, raw []byte, f Format) *FormatError {
	rec.Raw = rec.Raw[:0]
	if len(raw) < headerSize {
		return &FormatError{Msg: fmt.Sprintf("record of %d bytes is shorter than its header", len(raw))}
	}
	typ := RecordType(binary.NativeEndian.Uint32(raw))
	rec.Misc = binary.NativeEndian.Uint16(raw[4:])
	size := int(binary.NativeEndian.Uint16(raw[6:]))
	if size != len(raw) {
		return &FormatError{Type: typ, Msg: fmt.Sprintf("header size %d does not match record length %d", size, len(raw))}
	}
	if err := f.check(); err != nil {
		return &FormatError{Type: typ, Msg: err.Error()}
	}
	var err *FormatError
	if typ == RecordSample {
		err = decodeSample(&rec.Sample, raw, f)
	} else {
		err = decodeOther(rec, typ, raw, f)
	}
	if err != nil {
		err.Type = typ
		return err
	}
	rec.Type = typ
	return nil
}

func decodeOther(rec *Record, typ RecordType, raw []byte, f Format) *FormatError {
	body := raw[headerSize:]
	if n := f.idSize(); n > 0 {
		if len(body) < n {
			return &FormatError{Msg: fmt.Sprintf("%d-byte body too short for %d-byte sample_id trailer", len(body), n)}
		}
		decodeSampleID(&rec.ID, body[len(body)-n:], f.SampleType)
		body = body[:len(body)-n]
	} else {
		rec.ID = SampleID{}
	}
	c := cursor{b: body}
	switch typ {
	case RecordMmap, RecordMmap2:
		m := &rec.Mmap
		name := m.Filename[:0]
		*m = Mmap{PID: c.u32(), TID: c.u32(), Addr: c.u64(), Len: c.u64(), PgOff: c.u64()}
		if typ == RecordMmap2 {
			if rec.Misc&MiscMmapBuildID != 0 {
				id := c.bytes(24)
				if id != nil {
					if id[0] > maxBuildID {
						return &FormatError{Msg: fmt.Sprintf("build id size %d exceeds %d", id[0], maxBuildID)}
					}
					m.BuildIDSize = id[0]
					copy(m.BuildID[:], id[4:4+id[0]])
				}
			} else {
				m.Maj, m.Min, m.Ino, m.InoGeneration = c.u32(), c.u32(), c.u64(), c.u64()
			}
			m.Prot, m.Flags = c.u32(), c.u32()
		}
		if c.short {
			break
		}
		m.Filename = append(name, c.cstring()...)
	case RecordComm:
		name := rec.Comm.Comm[:0]
		rec.Comm = Comm{PID: c.u32(), TID: c.u32(), Exec: rec.Misc&MiscCommExec != 0}
		if c.short {
			break
		}
		rec.Comm.Comm = append(name, c.cstring()...)
	case RecordFork, RecordExit:
		rec.Task = Task{PID: c.u32(), PPID: c.u32(), TID: c.u32(), PTID: c.u32(), Time: c.u64()}
	case RecordLost:
		rec.Lost = Lost{ID: c.u64(), Lost: c.u64()}
	case RecordThrottle, RecordUnthrottle:
		rec.Throttle = Throttle{Time: c.u64(), ID: c.u64(), StreamID: c.u64()}
	case RecordLostSamples:
		rec.LostSamples = LostSamples{Lost: c.u64()}
	case RecordSwitch:
	case RecordSwitchCPUWide:
		rec.Switch = Switch{NextPrevPID: c.u32(), NextPrevTID: c.u32()}
	case RecordNamespaces:
		ns := &rec.Namespaces
		*ns = Namespaces{PID: c.u32(), TID: c.u32(), Count: c.u64()}
		if c.short {
			break
		}
		if ns.Count > uint64(c.left())/16 {
			return &FormatError{Msg: fmt.Sprintf("%d namespaces do not fit in the %d bytes left", ns.Count, c.left())}
		}
		for i := range ns.Count {
			l := NamespaceLink{Dev: c.u64(), Inode: c.u64()}
			if i < NamespaceCount {
				ns.Links[i] = l
			}
		}
	default:
		rec.Raw = append(rec.Raw, raw...)
		return nil
	}
	if c.short {
		return &FormatError{Msg: fmt.Sprintf("%d-byte body too short", len(body))}
	}
	return nil
}

// decodeSampleID decodes a trailer of exactly the right size.
func decodeSampleID(id *SampleID, b []byte, st uint64) {
	*id = SampleID{}
	c := cursor{b: b}
	if st&sampleTID != 0 {
		id.PID, id.TID = c.u32(), c.u32()
	}
	if st&sampleTime != 0 {
		id.Time = c.u64()
	}
	if st&sampleID != 0 {
		id.ID = c.u64()
	}
	if st&sampleStreamID != 0 {
		id.StreamID = c.u64()
	}
	if st&sampleCPU != 0 {
		id.CPU = c.u32()
		c.u32()
	}
	if st&sampleIdentifier != 0 {
		id.Identifier = c.u64()
	}
}

func decodeSample(s *Sample, raw []byte, f Format) *FormatError {
	cc, regs, stack, rawData := s.Callchain[:0], s.Regs[:0], s.Stack[:0], s.RawData[:0]
	*s = Sample{Callchain: cc, Regs: regs, Stack: stack, RawData: rawData}
	st := f.SampleType
	c := cursor{b: raw[headerSize:]}
	if st&sampleIdentifier != 0 {
		s.Identifier = c.u64()
	}
	if st&sampleIP != 0 {
		s.IP = c.u64()
	}
	if st&sampleTID != 0 {
		s.PID, s.TID = c.u32(), c.u32()
	}
	if st&sampleTime != 0 {
		s.Time = c.u64()
	}
	if st&sampleAddr != 0 {
		s.Addr = c.u64()
	}
	if st&sampleID != 0 {
		s.ID = c.u64()
	}
	if st&sampleStreamID != 0 {
		s.StreamID = c.u64()
	}
	if st&sampleCPU != 0 {
		s.CPU = c.u32()
		c.u32()
	}
	if st&samplePeriod != 0 {
		s.Period = c.u64()
	}
	if c.short {
		return shortSample(raw, st)
	}
	if st&sampleCallchain != 0 {
		nr := c.u64()
		if c.short {
			return shortSample(raw, st)
		}
		if nr > uint64(c.left()/8) {
			return &FormatError{Msg: fmt.Sprintf("callchain of %d entries exceeds the %d bytes left", nr, c.left())}
		}
		s.Callchain = readU64s(&c, cc, int(nr))
	}
	if st&sampleRaw != 0 {
		size := c.u32()
		data := c.bytes(uint64(size))
		if c.short {
			return &FormatError{Msg: fmt.Sprintf("raw data of %d bytes exceeds the record", size)}
		}
		s.RawData = append(rawData, data...)
	}
	if st&sampleRegsUser != 0 {
		s.RegsABI = c.u64()
		if s.RegsABI != RegsABINone {
			n := bits.OnesCount64(f.RegsUser)
			if n > c.left()/8 {
				return &FormatError{Msg: fmt.Sprintf("%d user registers exceed the %d bytes left", n, c.left())}
			}
			s.Regs = readU64s(&c, regs, n)
		}
	}
	if st&sampleStackUser != 0 {
		size := c.u64()
		if size != 0 {
			data := c.bytes(size)
			dyn := c.u64()
			if c.short {
				return &FormatError{Msg: fmt.Sprintf("user stack of %d bytes exceeds the record", size)}
			}
			if dyn > size {
				return &FormatError{Msg: fmt.Sprintf("user stack dyn_size %d exceeds size %d", dyn, size)}
			}
			s.StackSize = size
			s.Stack = append(stack, data[:dyn]...)
		}
	}
	if st&sampleCgroup != 0 {
		s.Cgroup = c.u64()
	}
	if c.short {
		return shortSample(raw, st)
	}
	if c.left() != 0 {
		return &FormatError{Msg: fmt.Sprintf("%d bytes left after sample fields (sample_type %#x)", c.left(), st)}
	}
	return nil
}

func shortSample(raw []byte, st uint64) *FormatError {
	return &FormatError{Msg: fmt.Sprintf("sample of %d bytes is too short for sample_type %#x", len(raw), st)}
}

// readU64s reads n values into dst[:0], growing it only when its capacity
// is too small. The caller has checked that n values are left.
func readU64s(c *cursor, dst []uint64, n int) []uint64 {
	if cap(dst) < n {
		dst = make([]uint64, n, n+n/4)
	}
	dst = dst[:n]
	b := c.b[c.off : c.off+8*n]
	for i := range dst {
		dst[i] = binary.NativeEndian.Uint64(b[8*i:])
	}
	c.off += 8 * n
	return dst
}
