package capture

// Most of what an application writes through SYSPROF_TRACE_FD are marks,
// logs and samples that [Cat] copies unchanged but for their pids. Those
// are copied as stored, without decoding them into Frames and encoding
// them back, when source and destination have the same byte order.

import (
	"fmt"
	"io"
)

// rawCopyable reports whether cat may copy the frame f as stored: its type
// needs no rewriting but for ids, it is long enough for what a decode
// would read (so copying it keeps the same errors: a frame that fails
// here is decoded, and the decode names the damage), and its addresses
// are not JIT addresses (renumbered into the destination's). files says
// whether the merge diverts embedded files and the symbols-follow
// metadata (see divert).
func (m *catMapper) rawCopyable(f *RawFrame, files bool) bool {
	b := f.Bytes
	switch f.Type {
	case TypeMark:
		return len(b) >= markFixed
	case TypeLog:
		return len(b) >= logFixed
	case TypeMetadata:
		return !files && len(b) >= metadataFixed
	case TypeTimestamp, TypeExit:
		return true
	case TypeProcess:
		return len(b) >= processFixed
	case TypeFork:
		return len(b) >= forkFixed
	case TypeSample:
		_, ok := f.SampleLen()
		return ok && !f.hasJITAddrs()
	case TypeAllocation:
		if len(b) < allocationFixed {
			return false
		}
		n := int(f.o.bits(f.o.u32(b[44:]), 0, 16))
		return allocationFixed+8*n <= len(b) && !f.hasJITAddrs()
	}
	return false
}

// noteRaw counts the frame f, which [catMapper.rawCopyable] accepted and
// which goes to dst in a [rawRun], as the typed writer would count it,
// and returns the latest time it covers.
func noteRaw(dst *Writer, f *RawFrame) int64 {
	b := f.Bytes
	end := int64(f.o.u64(b[8:]))
	dst.counts[f.Type]++
	dst.end = max(dst.end, end)
	if f.Type == TypeMark {
		end += int64(f.o.u64(b[24:]))
		dst.end = max(dst.end, end)
	}
	return end
}

// rawRun gathers frames that cat copies as stored and writes them to the
// destination together, without going through the Writer's buffer. From
// a capture in memory whose ids stay (data set), a run is a range of
// data, up to maxRun bytes, written without a copy of its own. Else the
// frames are copied into buf, up to copyRun bytes, and their ids mapped
// there: a buffer that stays in the CPU's cache while the kernel copies
// it out (the recorder's 4 MiB Writer buffer did not: merging a trace fd
// through it cost 0.1 µs a mark more).
type rawRun struct {
	m          *catMapper
	data       []byte
	start, end int64
	buf        []byte
}

// maxRun is the most a range holds before it is written. A write is one
// system call the Go scheduler does not see (unix.WriteFileRaw).
const maxRun = 1 << 20

// copyRun is the most a run's buffer holds.
const copyRun = 256 << 10

// newRawRun returns the run for frames from r, with m's id mapping.
func newRawRun(m *catMapper, r *Reader) *rawRun {
	if r.data != nil && m.mapPID == nil {
		return &rawRun{m: m, data: r.data}
	}
	return &rawRun{m: m, buf: make([]byte, 0, copyRun)}
}

// add adds f, which [catMapper.rawCopyable] accepted, to the run, writing
// the run first when f does not fit or (for a range) does not follow it.
func (r *rawRun) add(dst *Writer, f *RawFrame) error {
	if r.data == nil {
		if len(r.buf)+len(f.Bytes) > cap(r.buf) {
			if err := r.flush(dst); err != nil {
				return err
			}
		}
		n := len(r.buf)
		r.buf = append(r.buf, f.Bytes...)
		r.m.mapRawIDs(r.buf[n:], f.Type, f.o)
		return nil
	}
	if f.Off != r.end || r.end-r.start >= maxRun {
		if err := r.flush(dst); err != nil {
			return err
		}
		r.start = f.Off
	}
	r.end = f.Off + int64(len(f.Bytes))
	return nil
}

// flush writes the run to dst and empties it.
func (r *rawRun) flush(dst *Writer) error {
	if r.data == nil {
		b := r.buf
		r.buf = r.buf[:0]
		return dst.writeRun(b)
	}
	b := r.data[r.start:r.end]
	r.start = r.end
	return dst.writeRun(b)
}

// writeRun writes the whole frames b, stored in the Writer's byte order
// and counted by the caller (noteRaw), after what is buffered: a small run
// through the buffer, a large one straight from b.
func (w *Writer) writeRun(b []byte) error {
	if len(b) == 0 {
		return nil
	}
	if len(b) < directRun {
		c, err := w.reserveDirty(len(b))
		if err != nil {
			return err
		}
		copy(c, b)
		return nil
	}
	if w.closed {
		return ErrClosed
	}
	if err := w.flushBuffer(); err != nil {
		return err
	}
	// flushBuffer writes w.buf, and on a short write cuts the file back
	// to the last whole frame of it.
	buf := w.buf
	w.buf = b
	err := w.flushBuffer()
	w.buf = buf[:0]
	return err
}

// directRun is the least [Writer.writeRun] writes without the buffer.
const directRun = 64 << 10

// mapRawIDs maps in place the ids of the frame b of type t, stored in
// byte order o, as [MapIDs] maps those of a decoded frame.
func (m *catMapper) mapRawIDs(b []byte, t FrameType, o order) {
	if m.mapPID == nil {
		return
	}
	m.mapRaw(b[4:], o)
	switch t {
	case TypeSample:
		m.mapRaw(b[28:], o)
	case TypeAllocation:
		m.mapRaw(b[40:], o)
	case TypeFork:
		m.mapRaw(b[24:], o)
	}
}

// mapRaw maps the id stored in the first 4 bytes of b in place.
func (m *catMapper) mapRaw(b []byte, o order) {
	if id := int32(o.u32(b)); id > 0 {
		o.put32(b, uint32(m.id(id)))
	}
}

// id maps id (> 0) with mapPID, asking it once per id: the same id
// repeats in every frame a thread writes.
func (m *catMapper) id(id int32) int32 {
	if id == m.lastID {
		return m.lastHost
	}
	h, ok := m.ids[id]
	if !ok {
		h = m.mapPID(id)
		if m.ids == nil {
			m.ids = make(map[int32]int32)
		}
		m.ids[id] = h
	}
	m.lastID, m.lastHost = id, h
	return h
}

// readJITNames gives dst a JIT address for every name of the JIT_MAP
// frames r reads after offset after (-1: all). It stops at the first
// frame it cannot read or decode and returns that error as readErr; err
// is dst's.
func (m *catMapper) readJITNames(dst *Writer, r *Reader, after int64) (readErr, err error) {
	for {
		rf, rerr := r.NextRaw()
		if rerr == io.EOF {
			return nil, nil
		}
		if rerr != nil {
			return rerr, nil
		}
		if rf.Type != TypeJITMap || rf.Off <= after {
			continue
		}
		if rerr, err := m.addJITNames(dst, &rf); rerr != nil || err != nil {
			return rerr, err
		}
	}
}

// addJITNames gives dst a JIT address for every name of the JIT_MAP
// frame f: readErr says f could not be decoded, err is dst's.
func (m *catMapper) addJITNames(dst *Writer, f *RawFrame) (readErr, err error) {
	d, rerr := f.Decode()
	if rerr != nil {
		return rerr, nil
	}
	for _, e := range d.(*JITMap).Entries {
		a, err := dst.AddJITMap(e.Name)
		if err != nil {
			return nil, fmt.Errorf("cat: %w", err)
		}
		m.jit[e.Addr] = a
	}
	return nil, nil
}

// addrs returns the addresses stored in f, a SAMPLE, TRACE or ALLOCATION
// frame, undecoded (8 bytes each in f's byte order), or nil for other
// frames and damaged ones.
func (f *RawFrame) addrs() []byte {
	b := f.Bytes
	var fixed, n int
	switch f.Type {
	case TypeSample, TypeTrace:
		if len(b) < sampleFixed {
			return nil
		}
		fixed, n = sampleFixed, int(f.o.bits(f.o.u32(b[24:]), 0, 16))
	case TypeAllocation:
		if len(b) < allocationFixed {
			return nil
		}
		fixed, n = allocationFixed, int(f.o.bits(f.o.u32(b[44:]), 0, 16))
	default:
		return nil
	}
	if fixed+8*n > len(b) {
		return nil
	}
	return b[fixed : fixed+8*n]
}

// hasJITAddrs reports whether f holds an address in the JIT map's range.
func (f *RawFrame) hasJITAddrs() bool {
	a := f.addrs()
	for i := 0; i+8 <= len(a); i += 8 {
		if f.o.u64(a[i:])&JITMapMark != 0 {
			return true
		}
	}
	return false
}
