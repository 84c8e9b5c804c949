package capture

// RawFrame is one frame as stored, not yet decoded: a view of the bytes
// the [Reader] holds. From a Reader over a file it is valid until the next
// call of Next or NextRaw; from [NewBytesReader] as long as the Reader's
// data. Its methods decode only what the caller asks for, for loops that
// look at most frames briefly.
type RawFrame struct {
	// Off is the frame's offset in the file.
	Off int64
	// Type is the frame's type as stored.
	Type FrameType
	// Bytes is the whole frame, header included.
	Bytes []byte

	o            order
	allowUnknown bool
}

// NextRaw returns the next frame undecoded, with the same errors and
// skipping as [Reader.Next]; only the frame's length and type are checked.
// Decode the frame with the RawFrame's methods.
func (r *Reader) NextRaw() (RawFrame, error) {
	b, err := r.next()
	if err != nil {
		return RawFrame{}, err
	}
	return RawFrame{Off: r.off - int64(len(b)), Type: FrameType(b[16]), Bytes: b, o: r.o, allowUnknown: r.opts.AllowUnknown}, nil
}

// Head returns the frame's common header fields.
func (f *RawFrame) Head() FrameHeader {
	return FrameHeader{
		CPU:  int16(f.o.u16(f.Bytes[2:])),
		PID:  int32(f.o.u32(f.Bytes[4:])),
		Time: int64(f.o.u64(f.Bytes[8:])),
	}
}

// Decode decodes the frame as [Reader.Next] does. The frame it returns
// shares no memory with f.
func (f *RawFrame) Decode() (Frame, error) {
	return decodeFrame(f.o, f.Bytes, f.Off, f.allowUnknown)
}

// SampleLen returns the number of addresses [RawFrame.DecodeSample]
// would decode from f, without decoding them; false when f is not a
// SAMPLE frame whose addresses fit in it (DecodeSample then says why).
func (f *RawFrame) SampleLen() (int, bool) {
	b := f.Bytes
	if f.Type != TypeSample || len(b) < sampleFixed {
		return 0, false
	}
	n := int(f.o.bits(f.o.u32(b[24:]), 0, 16))
	return n, sampleFixed+8*n <= len(b)
}

// AllocationLen returns the size an ALLOCATION frame f records (0 for a
// free) and the number of addresses of its stack, without decoding them;
// false when f is not an ALLOCATION frame whose addresses fit in it.
func (f *RawFrame) AllocationLen() (size int64, n int, ok bool) {
	b := f.Bytes
	if f.Type != TypeAllocation || len(b) < allocationFixed {
		return 0, 0, false
	}
	n = int(f.o.bits(f.o.u32(b[44:]), 0, 16))
	return int64(f.o.u64(b[32:])), n, allocationFixed+8*n <= len(b)
}

// DecodeSample decodes a SAMPLE frame into s without allocating, reusing
// the capacity of s.Addrs (which holds nil when the frame has no address,
// as with Decode). It returns the [*FormatError] Decode would for a
// damaged frame, and one for a frame of another type.
func (f *RawFrame) DecodeSample(s *Sample) error {
	b := f.Bytes
	if f.Type != TypeSample {
		return &FormatError{Off: f.Off, Msg: "not a SAMPLE frame", Val: f.Type.String()}
	}
	if len(b) < sampleFixed {
		_, err := f.Decode()
		return err
	}
	n := int(f.o.bits(f.o.u32(b[24:]), 0, 16))
	if sampleFixed+8*n > len(b) {
		_, err := f.Decode()
		return err
	}
	s.FrameHeader = f.Head()
	s.TID = int32(f.o.u32(b[28:]))
	if n == 0 {
		s.Addrs = nil
		return nil
	}
	s.Addrs = f.addrsInto(s.Addrs, sampleFixed, n)
	return nil
}

// addrsInto returns the n addresses of f from byte off on, in dst's room
// when it has enough (else in a new slice of at least 64).
func (f *RawFrame) addrsInto(dst []uint64, off, n int) []uint64 {
	if cap(dst) < n {
		dst = make([]uint64, 0, max(n, 64))
	}
	dst = dst[:n]
	ab := f.Bytes[off : off+8*n]
	for i := range dst {
		dst[i] = f.o.u64(ab[8*i:])
	}
	return dst
}

// DecodeAllocation decodes an ALLOCATION frame into a without allocating,
// reusing the capacity of a.Addrs, as [RawFrame.DecodeSample] does for
// samples: a --memprof capture holds millions. A frame without addresses
// (a free) leaves a.Addrs empty, not nil, keeping its capacity for the
// allocation that follows. It returns the [*FormatError] Decode would for
// a damaged frame, and one for a frame of another type.
func (f *RawFrame) DecodeAllocation(a *Allocation) error {
	if f.Type != TypeAllocation {
		return &FormatError{Off: f.Off, Msg: "not an ALLOCATION frame", Val: f.Type.String()}
	}
	size, n, ok := f.AllocationLen()
	if !ok {
		_, err := f.Decode()
		return err
	}
	b := f.Bytes
	a.FrameHeader = f.Head()
	a.Addr, a.Size, a.TID = f.o.u64(b[24:]), size, int32(f.o.u32(b[40:]))
	a.Addrs = f.addrsInto(a.Addrs, allocationFixed, n)
	return nil
}

// DecodeFileChunk decodes a FILE_CHUNK frame into c with c.Data a view of
// f's bytes, valid as long as f is, instead of a copy. It returns the
// [*FormatError] Decode would for a damaged frame, and one for a frame of
// another type.
func (f *RawFrame) DecodeFileChunk(c *FileChunk) error {
	if f.Type != TypeFileChunk {
		return &FormatError{Off: f.Off, Msg: "not a FILE_CHUNK frame", Val: f.Type.String()}
	}
	b := f.Bytes
	if len(b) < fileChunkFixed {
		_, err := f.Decode()
		return err
	}
	word := f.o.u32(b[24:])
	n := int(f.o.bits(word, 16, 16))
	if fileChunkFixed+n > len(b) {
		_, err := f.Decode()
		return err
	}
	*c = FileChunk{
		FrameHeader: f.Head(),
		IsLast:      f.o.bits(word, 0, 1) == 1,
		Path:        fieldString(b[28 : 28+fileChunkPathLen]),
	}
	if n > 0 {
		c.Data = b[fileChunkFixed : fileChunkFixed+n : fileChunkFixed+n]
	}
	return nil
}

// FileChunkDataOffset is where a FILE_CHUNK frame's data starts, from the
// start of the frame: the data [RawFrame.DecodeFileChunk] returns is at
// file offset Off+FileChunkDataOffset.
const FileChunkDataOffset = fileChunkFixed

// DecodeFrame decodes one frame stored in the machine's byte order, such
// as those Sysprof's collector (libsysprof-capture's sysprof_collector_*
// API and its LD_PRELOAD libraries) writes into the shared rings of
// SYSPROF_CONTROL_FD. b must hold exactly the frame.
func DecodeFrame(b []byte) (Frame, error) {
	return decodeFrame(order{big: nativeBig}, b, 0, false)
}
