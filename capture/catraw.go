package capture

// Most of what an application writes through SYSPROF_TRACE_FD are marks,
// logs and samples that [Cat] copies unchanged but for their pids. Those
// are copied as stored, without decoding them into Frames and encoding
// them back, when source and destination have the same byte order.

// rawCopyable reports whether cat may copy the frame f as stored: its type
// needs no rewriting but for ids, it is long enough for what a decode
// would read (so copying it keeps the same errors: a frame that fails
// here is decoded, and the decode names the damage), and its addresses
// need no JIT renumbering. files says whether the merge diverts embedded
// files and the symbols-follow metadata (see divert).
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
		n, ok := f.SampleLen()
		return ok && (n == 0 || len(m.jit) == 0)
	case TypeAllocation:
		if len(b) < allocationFixed {
			return false
		}
		n := int(f.o.bits(f.o.u32(b[44:]), 0, 16))
		return allocationFixed+8*n <= len(b) && (n == 0 || len(m.jit) == 0)
	}
	return false
}

// copyRaw appends the frame f, which [catMapper.rawCopyable] accepted, to
// dst as stored, with its ids mapped, and returns the latest time it
// covers.
func (m *catMapper) copyRaw(dst *Writer, f *RawFrame) (int64, error) {
	b, err := dst.appendRaw(f.Bytes, f.Type)
	if err != nil {
		return 0, err
	}
	end := int64(f.o.u64(b[8:]))
	if f.Type == TypeMark {
		end += int64(f.o.u64(b[24:]))
		dst.end = max(dst.end, end)
	}
	if m.mapPID == nil {
		return end, nil
	}
	m.mapRaw(b[4:], f.o)
	switch f.Type {
	case TypeSample:
		m.mapRaw(b[28:], f.o)
	case TypeAllocation:
		m.mapRaw(b[40:], f.o)
	case TypeFork:
		m.mapRaw(b[24:], f.o)
	}
	return end, nil
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

// appendRaw appends the frame b, stored in the Writer's byte order and
// checked by the caller, and returns the Writer's copy for the caller to
// patch before the next write. It counts the frame and its time as
// frameHeader does.
func (w *Writer) appendRaw(b []byte, t FrameType) ([]byte, error) {
	c, err := w.reserveDirty(len(b))
	if err != nil {
		return nil, err
	}
	copy(c, b)
	w.counts[t]++
	w.end = max(w.end, int64(w.o.u64(c[8:])))
	return c, nil
}
