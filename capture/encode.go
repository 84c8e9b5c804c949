package capture

import (
	"encoding/binary"
	"fmt"
	"strings"
	"unsafe"
)

// WriteFrame appends f to the capture. Strings in fixed-size fields are
// truncated at a UTF-8 boundary; a frame that cannot fit in [MaxFrameLen]
// bytes is refused with an error wrapping [ErrFrameTooLarge]. For [*Unknown]
// frames an error is returned.
func (w *Writer) WriteFrame(f Frame) error {
	// Samples are most of a profile: test for them before the type switch.
	if s, ok := f.(*Sample); ok {
		return w.writeSample(&s.FrameHeader, s.TID, s.Addrs)
	}
	switch f := f.(type) {
	case *Timestamp:
		return w.writeTimestamp(f)
	case *Sample:
		return w.writeAddrs(&f.FrameHeader, TypeSample, f.TID, false, f.Addrs)
	case *Trace:
		t := TypeSample
		if w.opts.NewFrameTypes {
			t = TypeTrace
		}
		return w.writeAddrs(&f.FrameHeader, t, f.TID, f.Entering, f.Addrs)
	case *Map:
		return w.writeMap(f)
	case *Process:
		return w.writeTrailingString(&f.FrameHeader, TypeProcess, processFixed, f.Cmdline)
	case *Fork:
		return w.writeFork(f)
	case *Exit:
		b, err := w.reserve(FrameHeaderSize)
		if err != nil {
			return err
		}
		w.frameHeader(b, &f.FrameHeader, TypeExit)
		return nil
	case *JITMap:
		return w.writeJITMap(f)
	case *CounterDefine:
		return w.writeCounterDefine(f)
	case *CounterSet:
		return w.writeCounterSet(f)
	case *Mark:
		return w.writeMark(f)
	case *Metadata:
		return w.writeMetadata(f)
	case *Log:
		return w.writeLog(f)
	case *FileChunk:
		return w.writeFileChunk(f)
	case *Allocation:
		return w.AddAllocation(f.Time, f.CPU, f.PID, f.TID, f.Addr, f.Size, f.Addrs)
	case *Overlay:
		return w.writeOverlay(f)
	case *DBusMessage:
		return w.writeDBus(f)
	case nil:
		return fmt.Errorf("write nil frame")
	}
	return fmt.Errorf("write %s frame: unsupported frame type %T", f.Type(), f)
}

func tooLarge(t FrameType, n int) error {
	return fmt.Errorf("write %s frame of %d bytes: %w", t, n, ErrFrameTooLarge)
}

func (w *Writer) writeTimestamp(f *Timestamp) error {
	b, err := w.reserve(FrameHeaderSize)
	if err != nil {
		return err
	}
	w.frameHeader(b, &f.FrameHeader, TypeTimestamp)
	return nil
}

func (w *Writer) writeAddrs(h *FrameHeader, t FrameType, tid int32, entering bool, addrs []uint64) error {
	if len(addrs) > MaxSampleAddrs {
		return fmt.Errorf("write %s frame with %d addresses (at most %d): %w", t, len(addrs), MaxSampleAddrs, ErrFrameTooLarge)
	}
	b, err := w.reserveDirty(sampleFixed + 8*len(addrs))
	if err != nil {
		return err
	}
	// Every byte is written: the header, the two words, the addresses.
	w.frameHeader(b, h, t)
	w.o.put32(b[24:], w.o.pack(uint32(len(addrs)), 0, 16)|w.o.pack(boolBit(entering), 16, 1))
	w.o.put32(b[28:], uint32(tid))
	w.putAddrs(b[sampleFixed:], addrs)
	return nil
}

// AddSample writes a SAMPLE frame, as sysprof_capture_writer_add_sample:
// the callchain addrs (innermost first) of thread tid of process pid, on
// cpu at time.
func (w *Writer) AddSample(time int64, cpu int16, pid, tid int32, addrs []uint64) error {
	h := FrameHeader{CPU: cpu, PID: pid, Time: time}
	return w.writeSample(&h, tid, addrs)
}

// writeSample is the SAMPLE hot path: when the frame fits in the buffer,
// the writer is healthy and it writes the machine's little-endian order,
// every byte is stored here directly (no zeroing, no calls but the
// address memmove); anything else takes the general path.
func (w *Writer) writeSample(h *FrameHeader, tid int32, addrs []uint64) error {
	n := sampleFixed + 8*len(addrs)
	l := len(w.buf)
	if !w.fast || l+n > w.size || len(addrs) > MaxSampleAddrs {
		return w.writeAddrs(h, TypeSample, tid, false, addrs)
	}
	w.buf = w.buf[:l+n]
	// The four header words in one store: the fast path runs only on
	// little-endian machines writing their own order.
	*(*[4]uint64)(unsafe.Pointer(&w.buf[l])) = [4]uint64{
		uint64(n) | uint64(uint16(h.CPU))<<16 | uint64(uint32(h.PID))<<32,
		uint64(h.Time),
		uint64(TypeSample),
		uint64(len(addrs)) | uint64(uint32(tid))<<32,
	}
	if len(addrs) > 0 {
		copy(w.buf[l+sampleFixed:], unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(addrs))), 8*len(addrs)))
	}
	w.counts[TypeSample]++
	w.end = max(w.end, h.Time)
	return nil
}

// nativeBig is the machine's byte order.
var nativeBig = binary.NativeEndian.Uint16([]byte{0, 1}) == 1

// putAddrs stores addrs at the start of b, writing all of b[:8*len(addrs)].
// In the machine's byte order (the
// default) the addresses' memory is copied as it is, one memmove as
// libsysprof-capture's memcpy; a loop of 8-byte stores took 3/4 of the time
// of writing a 32-address sample.
func (w *Writer) putAddrs(b []byte, addrs []uint64) {
	if len(addrs) == 0 {
		return
	}
	if w.o.big == nativeBig {
		copy(b, unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(addrs))), 8*len(addrs)))
		return
	}
	for i, v := range addrs {
		w.o.put64(b[8*i:], v)
	}
}

func (w *Writer) writeMap(f *Map) error {
	if strings.IndexByte(f.Filename, 0) >= 0 {
		return fmt.Errorf("write MAP frame: file name %q contains a NUL byte", f.Filename)
	}
	if !isHex(f.BuildID) {
		return fmt.Errorf("write MAP frame: build-id %q is not hex", f.BuildID)
	}
	n := mapFixed + len(f.Filename) + 1
	if f.BuildID != "" {
		n += 1 + len(f.BuildID) + 1
	}
	if align(n) > MaxFrameLen {
		return tooLarge(TypeMap, n)
	}
	b, err := w.reserve(align(n))
	if err != nil {
		return err
	}
	w.frameHeader(b, &f.FrameHeader, TypeMap)
	w.o.put64(b[24:], f.Start)
	w.o.put64(b[32:], f.End)
	w.o.put64(b[40:], f.Offset)
	w.o.put64(b[48:], f.Inode)
	p := mapFixed + copy(b[mapFixed:], f.Filename) + 1
	if f.BuildID != "" {
		b[p] = '@'
		copy(b[p+1:], strings.ToLower(f.BuildID))
	}
	return nil
}

// isHex reports whether s is made of hexadecimal digits only.
func isHex[T string | []byte](s T) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}

// writeTrailingString writes a frame whose variable part is one
// NUL-terminated string (PROCESS).
func (w *Writer) writeTrailingString(h *FrameHeader, t FrameType, fixed int, s string) error {
	s = cutNUL(s)
	n := fixed + len(s) + 1
	if align(n) > MaxFrameLen {
		return tooLarge(t, n)
	}
	b, err := w.reserve(align(n))
	if err != nil {
		return err
	}
	w.frameHeader(b, h, t)
	copy(b[fixed:], s)
	return nil
}

// sameString reports whether a == b. A program that writes the same
// literal again and again (a mark's group and name) passes the same
// pointer, which answers without calling the runtime's memequal.
func sameString(a, b string) bool {
	return len(a) == len(b) && (unsafe.StringData(a) == unsafe.StringData(b) || a == b)
}

// putPadded stores s at the start of b and zeroes the rest of b. Strings of
// up to 16 bytes, most mark messages, in a b of up to 24 bytes whose length
// is a multiple of 8 (a frame's padded tail) take a few word stores instead
// of a memmove and a memclr: the words of b are zeroed, then s is stored as
// two overlapping halves. Anything else is copied and cleared.
func putPadded(b []byte, s string) {
	n := len(s)
	if n > 16 || len(b) > 24 || len(b) <= n || len(b)%8 != 0 {
		clear(b[copy(b, s):])
		return
	}
	d, p := unsafe.Pointer(unsafe.SliceData(b)), unsafe.Pointer(unsafe.StringData(s))
	for i := 0; i < len(b); i += 8 {
		*(*uint64)(unsafe.Add(d, i)) = 0
	}
	switch {
	case n >= 8:
		lo, hi := *(*uint64)(p), *(*uint64)(unsafe.Add(p, n-8))
		*(*uint64)(d) = lo
		*(*uint64)(unsafe.Add(d, n-8)) = hi
	case n >= 4:
		lo, hi := *(*uint32)(p), *(*uint32)(unsafe.Add(p, n-4))
		*(*uint32)(d) = lo
		*(*uint32)(unsafe.Add(d, n-4)) = hi
	case n > 0:
		// Positions 0, n/2 and n-1 cover every byte of 1 to 3.
		b[0], b[n/2], b[n-1] = s[0], s[n/2], s[n-1]
	}
}

// cutNUL drops everything from the first NUL byte, which readers would
// never see.
func cutNUL(s string) string {
	if i := strings.IndexByte(s, 0); i >= 0 {
		return s[:i]
	}
	return s
}

func (w *Writer) writeFork(f *Fork) error {
	b, err := w.reserve(align(forkFixed))
	if err != nil {
		return err
	}
	w.frameHeader(b, &f.FrameHeader, TypeFork)
	w.o.put32(b[24:], uint32(f.ChildPID))
	return nil
}

func (w *Writer) writeJITMap(f *JITMap) error {
	n := jitmapFixed
	for _, e := range f.Entries {
		n += 8 + len(cutNUL(e.Name)) + 1
	}
	if align(n) > MaxFrameLen {
		return tooLarge(TypeJITMap, n)
	}
	b, err := w.reserve(align(n))
	if err != nil {
		return err
	}
	w.frameHeader(b, &f.FrameHeader, TypeJITMap)
	w.o.put32(b[24:], uint32(len(f.Entries)))
	p := jitmapFixed
	for _, e := range f.Entries {
		w.o.put64(b[p:], e.Addr)
		p += 8
		p += copy(b[p:], cutNUL(e.Name)) + 1
	}
	return nil
}

func (w *Writer) writeCounterDefine(f *CounterDefine) error {
	if len(f.Counters) > MaxCountersPerFrame {
		return fmt.Errorf("write CTRDEF frame with %d counters (at most %d): %w", len(f.Counters), MaxCountersPerFrame, ErrFrameTooLarge)
	}
	for _, c := range f.Counters {
		if c.ID == 0 || c.ID > MaxCounterID {
			return fmt.Errorf("write CTRDEF frame: counter %q id %d out of range 1..%d", c.Name, c.ID, MaxCounterID)
		}
	}
	b, err := w.reserve(ctrdefFixed + counterSize*len(f.Counters))
	if err != nil {
		return err
	}
	w.frameHeader(b, &f.FrameHeader, TypeCounterDefine)
	w.o.put32(b[24:], w.o.pack(uint32(len(f.Counters)), 0, 16))
	for i, c := range f.Counters {
		cb := b[ctrdefFixed+counterSize*i:]
		putFixed(cb[0:counterCatLen], c.Category)
		putFixed(cb[32:32+counterNameLen], c.Name)
		putFixed(cb[64:64+counterDescLen], c.Description)
		w.o.put32(cb[116:], w.o.pack(c.ID, 0, 24)|w.o.pack(uint32(c.Type), 24, 8))
		w.o.put64(cb[120:], uint64(c.Value))
	}
	return nil
}

func (w *Writer) writeCounterSet(f *CounterSet) error {
	if len(f.Updates) > MaxCounterValuesPerFrame {
		return fmt.Errorf("write CTRSET frame with %d values (at most %d): %w", len(f.Updates), MaxCounterValuesPerFrame, ErrFrameTooLarge)
	}
	groups := (len(f.Updates) + 7) / 8
	b, err := w.reserve(ctrsetFixed + ctrsetGroupSize*groups)
	if err != nil {
		return err
	}
	w.frameHeader(b, &f.FrameHeader, TypeCounterSet)
	w.o.put32(b[24:], w.o.pack(uint32(groups), 0, 16))
	for i, u := range f.Updates {
		g := b[ctrsetFixed+ctrsetGroupSize*(i/8):]
		w.o.put32(g[4*(i%8):], u.ID)
		w.o.put64(g[32+8*(i%8):], uint64(u.Value))
	}
	return nil
}

func (w *Writer) writeMark(f *Mark) error {
	msg := f.Message
	if !sameString(msg, w.mark.msg) {
		msg = cutNUL(msg)
		if len(msg) == len(f.Message) {
			w.mark.msg = msg
		}
	}
	n := markFixed + len(msg) + 1
	if align(n) > MaxFrameLen {
		return tooLarge(TypeMark, n)
	}
	// The common case, as writeSample: little-endian, room in the
	// buffer, group and name short enough to need no truncation. Marks
	// repeat their group and name, so their 64 bytes are kept encoded.
	l, an := len(w.buf), align(n)
	if w.fast && l+an <= w.size && len(f.Group) < markGroupLen && len(f.Name) < markNameLen {
		if !sameString(f.Group, w.mark.group) || !sameString(f.Name, w.mark.name) {
			w.mark.fixed = [markFixed - 32]byte{}
			copy(w.mark.fixed[:markGroupLen], f.Group)
			copy(w.mark.fixed[markGroupLen:], f.Name)
			w.mark.group, w.mark.name = f.Group, f.Name
		}
		b := w.buf[l : l+an]
		w.buf = w.buf[:l+an]
		binary.LittleEndian.PutUint64(b[0:], uint64(an)|uint64(uint16(f.CPU))<<16|uint64(uint32(f.PID))<<32)
		binary.LittleEndian.PutUint64(b[8:], uint64(f.Time))
		binary.LittleEndian.PutUint64(b[16:], uint64(TypeMark))
		binary.LittleEndian.PutUint64(b[24:], uint64(f.Duration))
		*(*[markFixed - 32]byte)(b[32:markFixed]) = w.mark.fixed
		putPadded(b[markFixed:], msg)
		w.counts[TypeMark]++
		w.end = max(w.end, f.Time, f.Time+f.Duration)
		return nil
	}
	b, err := w.reserveDirty(an)
	if err != nil {
		return err
	}
	// Every byte is written: header, duration, the two fixed strings
	// (zeroed then copied), the message and its NUL and padding.
	w.frameHeader(b, &f.FrameHeader, TypeMark)
	w.o.put64(b[24:], uint64(f.Duration))
	clear(b[32:markFixed])
	putFixed(b[32:32+markGroupLen], f.Group)
	putFixed(b[56:56+markNameLen], f.Name)
	clear(b[markFixed+copy(b[markFixed:], msg):])
	if e := f.Time + f.Duration; e > w.end {
		w.end = e
	}
	return nil
}

func (w *Writer) writeMetadata(f *Metadata) error {
	v := cutNUL(f.Value)
	n := metadataFixed + len(v) + 1
	if align(n) > MaxFrameLen {
		return tooLarge(TypeMetadata, n)
	}
	b, err := w.reserve(align(n))
	if err != nil {
		return err
	}
	w.frameHeader(b, &f.FrameHeader, TypeMetadata)
	putFixed(b[24:24+metadataIDLen], f.ID)
	copy(b[metadataFixed:], v)
	return nil
}

func (w *Writer) writeLog(f *Log) error {
	msg := cutNUL(f.Message)
	n := logFixed + len(msg) + 1
	if align(n) > MaxFrameLen {
		return tooLarge(TypeLog, n)
	}
	b, err := w.reserve(align(n))
	if err != nil {
		return err
	}
	w.frameHeader(b, &f.FrameHeader, TypeLog)
	w.o.put32(b[24:], w.o.pack(uint32(f.Severity), 0, 16))
	putFixed(b[32:32+logDomainLen], f.Domain)
	copy(b[logFixed:], msg)
	return nil
}

func (w *Writer) writeFileChunk(f *FileChunk) error {
	if len(f.Data) > MaxFileChunkData {
		return fmt.Errorf("write FILE_CHUNK frame with %d data bytes (at most %d): %w", len(f.Data), MaxFileChunkData, ErrFrameTooLarge)
	}
	b, err := w.reserve(align(fileChunkFixed + len(f.Data)))
	if err != nil {
		return err
	}
	w.frameHeader(b, &f.FrameHeader, TypeFileChunk)
	w.o.put32(b[24:], w.o.pack(boolBit(f.IsLast), 0, 1)|w.o.pack(uint32(len(f.Data)), 16, 16))
	putFixed(b[28:28+fileChunkPathLen], f.Path)
	copy(b[fileChunkFixed:], f.Data)
	return nil
}

// AddAllocation writes an ALLOCATION frame, as
// sysprof_capture_writer_add_allocation: a block of size bytes at addr
// allocated by thread tid of process pid from the stack addrs (innermost
// first), or freed when size is 0 and addrs is empty.
func (w *Writer) AddAllocation(time int64, cpu int16, pid, tid int32, addr uint64, size int64, addrs []uint64) error {
	// The hot path of `record --memprof`, as writeSample: every byte
	// stored here directly when the frame fits in a healthy buffer.
	n := allocationFixed + 8*len(addrs)
	l := len(w.buf)
	if !w.fast || l+n > w.size || len(addrs) > MaxAllocationAddrs {
		return w.writeAllocation(&Allocation{FrameHeader: FrameHeader{CPU: cpu, PID: pid, Time: time}, TID: tid, Addr: addr, Size: size, Addrs: addrs})
	}
	w.buf = w.buf[:l+n]
	// Word by word: a [6]uint64 literal is built on the stack and copied
	// in 16-byte moves that wait on its 8-byte stores (store forwarding
	// fails), a third of the frame's time.
	q := (*[6]uint64)(unsafe.Pointer(&w.buf[l]))
	q[0] = uint64(n) | uint64(uint16(cpu))<<16 | uint64(uint32(pid))<<32
	q[1] = uint64(time)
	q[2] = uint64(TypeAllocation)
	q[3] = addr
	q[4] = uint64(size)
	q[5] = uint64(uint32(tid)) | uint64(len(addrs))<<32
	if len(addrs) > 0 {
		copy(w.buf[l+allocationFixed:], unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(addrs))), 8*len(addrs)))
	}
	w.counts[TypeAllocation]++
	w.end = max(w.end, time)
	return nil
}

func (w *Writer) writeAllocation(f *Allocation) error {
	if len(f.Addrs) > MaxAllocationAddrs {
		return fmt.Errorf("write ALLOCATION frame with %d addresses (at most %d): %w", len(f.Addrs), MaxAllocationAddrs, ErrFrameTooLarge)
	}
	b, err := w.reserveDirty(allocationFixed + 8*len(f.Addrs))
	if err != nil {
		return err
	}
	clear(b[:allocationFixed]) // putAddrs writes the rest
	w.frameHeader(b, &f.FrameHeader, TypeAllocation)
	w.o.put64(b[24:], f.Addr)
	w.o.put64(b[32:], uint64(f.Size))
	w.o.put32(b[40:], uint32(f.TID))
	w.o.put32(b[44:], w.o.pack(uint32(len(f.Addrs)), 0, 16))
	w.putAddrs(b[allocationFixed:], f.Addrs)
	return nil
}

func (w *Writer) writeOverlay(f *Overlay) error {
	src, dst := cutNUL(f.Src), cutNUL(f.Dst)
	if len(src) > 0xFFFF || len(dst) > 0xFFFF {
		return tooLarge(TypeOverlay, overlayFixed+len(src)+len(dst)+2)
	}
	n := overlayFixed + len(src) + 1 + len(dst) + 1
	if align(n) > MaxFrameLen {
		return tooLarge(TypeOverlay, n)
	}
	b, err := w.reserve(align(n))
	if err != nil {
		return err
	}
	w.frameHeader(b, &f.FrameHeader, TypeOverlay)
	b[24] = f.Layer
	w.o.put16(b[28:], uint16(len(src)))
	w.o.put16(b[30:], uint16(len(dst)))
	copy(b[overlayFixed:], src)
	copy(b[overlayFixed+len(src)+1:], dst)
	return nil
}

func (w *Writer) writeDBus(f *DBusMessage) error {
	if !w.opts.NewFrameTypes {
		return fmt.Errorf("write DBUS_MESSAGE frame: %w", ErrNewFrameType)
	}
	n := dbusFixed + len(f.Message)
	if align(n) > MaxFrameLen {
		return tooLarge(TypeDBusMessage, n)
	}
	b, err := w.reserve(align(n))
	if err != nil {
		return err
	}
	w.frameHeader(b, &f.FrameHeader, TypeDBusMessage)
	w.o.put16(b[24:], w.o.pack16(uint16(f.BusType), 0, 2)|w.o.pack16(f.Flags, 2, 14))
	w.o.put16(b[26:], uint16(len(f.Message)))
	copy(b[dbusFixed:], f.Message)
	return nil
}
