package capture

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"time"

	"nsprof/internal/outfile"
	"nsprof/internal/unix"
)

// WriterOptions configures a [Writer]. The zero value is the default.
type WriterOptions struct {
	// BufferSize is how many bytes are buffered before they are written
	// out. Default and minimum: 256 KiB (64 pages, libsysprof-capture's
	// default).
	BufferSize int
	// ByteOrder of the frames: binary.LittleEndian or binary.BigEndian.
	// Default: the machine's native order, as Sysprof writes.
	ByteOrder binary.ByteOrder
	// NewFrameTypes allows TRACE (16) and DBUS_MESSAGE (17) frames.
	// Default off: Sysprof 3.46 stops reading at the first such frame, so
	// a Trace is written as a SAMPLE and a DBusMessage is refused.
	NewFrameTypes bool
	// StartTime is the header's start time. Default: Clock() at creation.
	StartTime int64
	// EndTime is the header's end time written at creation. It matters
	// for destinations that cannot be patched later (pipes); Flush patches
	// seekable files with the real end. Default 0, which readers treat as
	// "scan the frames".
	EndTime int64
	// CaptureTime is the wall-clock creation time stored in the header.
	// Default: time.Now().
	CaptureTime time.Time
	// Clock gives the current capture time when the end time is patched on
	// Flush. Default: CLOCK_MONOTONIC. Return math.MinInt64 to let only the
	// frames written decide the end time.
	Clock func() int64
}

// Writer writes a capture. Frames are buffered; Flush writes them out and,
// when the destination is seekable and the capture started at its offset 0,
// patches the header's start and end time. A Writer is not safe for
// concurrent use.
type Writer struct {
	dst     io.Writer
	patch   io.WriterAt // nil when the header cannot be patched
	closer  io.Closer   // closed by Close when the Writer owns dst
	o       order
	opts    WriterOptions
	buf     []byte
	size    int
	start   int64
	end     int64 // max of frame times and extended ranges
	stopped int64 // StopClock's time, 0 before
	written int64 // bytes handed to dst
	err     error // sticky write error
	closed  bool
	// fast is the fast paths' one check: the Writer is open, healthy and
	// writes little-endian frames on a little-endian machine.
	fast      bool
	counts    [256]uint64
	counterID uint32
	// rawFD is dst's descriptor when dst is a regular *os.File, written
	// with unix.WriteFileRaw; -1 otherwise.
	rawFD int
	// prealloc is the file offset up to which blocks are reserved
	// (see preallocate); noPrealloc is set once the file system refused.
	prealloc   int64
	noPrealloc bool

	// mark caches what writeMark encoded last: the group and name
	// fields, and a message known to hold no NUL.
	mark struct {
		group, name, msg string
		fixed            [markFixed - 32]byte
	}

	jitIDs     map[string]uint64
	jitSeq     uint64
	jitPending []JITEntry
	jitBytes   int
}

const defaultBufferSize = 64 * 4096

// NewWriter writes a capture to w with default options.
func NewWriter(w io.Writer) (*Writer, error) {
	return NewWriterWithOptions(w, WriterOptions{})
}

// NewWriterWithOptions writes a capture to w. The header is written at once.
// If w is an *os.File (or any io.WriteSeeker that is also an io.WriterAt)
// positioned at offset 0, the header's time range is patched on every Flush.
func NewWriterWithOptions(w io.Writer, opts WriterOptions) (*Writer, error) {
	if opts.BufferSize < defaultBufferSize {
		opts.BufferSize = defaultBufferSize
	}
	if opts.Clock == nil {
		opts.Clock = monotonicNow
	}
	if opts.CaptureTime.IsZero() {
		opts.CaptureTime = time.Now()
	}
	big := false
	if opts.ByteOrder != nil {
		big = opts.ByteOrder.Uint16([]byte{0, 1}) == 1
	} else {
		big = binary.NativeEndian.Uint16([]byte{0, 1}) == 1
	}
	if opts.StartTime == 0 {
		if now := opts.Clock(); now != math.MinInt64 {
			opts.StartTime = now
		}
	}
	wr := &Writer{
		dst:       w,
		o:         order{big: big},
		opts:      opts,
		buf:       make([]byte, 0, opts.BufferSize+MaxFrameLen),
		size:      opts.BufferSize,
		start:     opts.StartTime,
		end:       opts.StartTime,
		counterID: 1,
		jitIDs:    make(map[string]uint64),
		rawFD:     regularFD(w),
	}
	wr.fast = !big && !nativeBig
	if s, ok := w.(io.Seeker); ok {
		if at, ok := w.(io.WriterAt); ok {
			if pos, err := s.Seek(0, io.SeekCurrent); err == nil && pos == 0 {
				wr.patch = at
			}
		}
	}
	wr.buf = wr.appendHeader(wr.buf)
	if err := wr.flushBuffer(); err != nil {
		return nil, fmt.Errorf("write capture header: %w", err)
	}
	return wr, nil
}

// regularFD returns the descriptor of w if it is an *os.File open on a
// regular file, else -1. Fd puts the file in blocking mode, which regular
// files always are.
func regularFD(w io.Writer) int {
	f, ok := w.(*os.File)
	if !ok {
		return -1
	}
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		return -1
	}
	return int(f.Fd())
}

// Create creates the file at path, mode 0640, and returns a Writer that
// owns it: Close closes the file. An existing regular file at path is
// replaced when the Writer is closed (the capture is written under a
// temporary name in the same directory until then); it is never opened,
// so a hard link at path keeps its other names' contents. A symbolic link
// or other non-regular file at path is refused, not followed.
func Create(path string) (*Writer, error) {
	return CreateWithOptions(path, WriterOptions{})
}

// CreateWithOptions is [Create] with options.
func CreateWithOptions(path string, opts WriterOptions) (*Writer, error) {
	f, err := outfile.Create(path, outfile.Options{Replace: true, Perm: 0o640})
	if err != nil {
		return nil, err
	}
	w, err := NewWriterWithOptions(f.File, opts)
	if err != nil {
		f.Discard()
		return nil, err
	}
	w.closer = f
	return w, nil
}

func (w *Writer) appendHeader(b []byte) []byte {
	h := make([]byte, HeaderSize)
	binary.LittleEndian.PutUint32(h[0:], Magic)
	w.o.put32(h[4:], w.o.pack(Version, 0, 8)|w.o.pack(boolBit(!w.o.big), 8, 1))
	putFixed(h[8:8+captureTimeLen], w.opts.CaptureTime.UTC().Format(captureTimeLayout))
	w.o.put64(h[72:], uint64(w.start))
	w.o.put64(h[80:], uint64(w.opts.EndTime))
	return append(b, h...)
}

func boolBit(b bool) uint32 {
	if b {
		return 1
	}
	return 0
}

// StartTime returns the header's start time.
func (w *Writer) StartTime() int64 { return w.start }

// EndTime returns the latest time seen so far: frame times, mark ends and
// ranges given to [Writer.ExtendTimeRange].
func (w *Writer) EndTime() int64 { return w.end }

// ExtendTimeRange widens the header's time range to include start and end.
// [Cat] uses it so that a merged capture keeps the earliest start and the
// latest end of its inputs.
func (w *Writer) ExtendTimeRange(start, end int64) {
	if start != 0 && start < w.start {
		w.start = start
	}
	if end > w.end {
		w.end = end
	}
}

// StopClock stops the Writer's clock at t: the header's end time patched
// on Flush is no longer the current time, and the frames the Writer
// stamps itself ([Writer.AddProcessInfo], [Writer.CloseProcessFile]) get
// t. A recorder calls it when recording stops, so that what it writes
// afterwards (symbols, totals) does not lengthen the capture.
func (w *Writer) StopClock(t int64) {
	w.stopped = t
	w.opts.Clock = func() int64 { return t }
	w.ExtendTimeRange(0, t)
}

// now is the time of the frames the Writer stamps itself.
func (w *Writer) now() int64 {
	if w.stopped != 0 {
		return w.stopped
	}
	return Now()
}

// Count returns how many frames of type t have been written.
func (w *Writer) Count(t FrameType) uint64 { return w.counts[t] }

// BytesWritten returns the size of the capture so far, buffered bytes
// included.
func (w *Writer) BytesWritten() int64 { return w.written + int64(len(w.buf)) }

// reserve returns n zeroed bytes (n a multiple of 8) at the end of the
// buffer for one frame, flushing first when the buffer is full.
func (w *Writer) reserve(n int) ([]byte, error) {
	b, err := w.reserveDirty(n)
	clear(b)
	return b, err
}

// reserveDirty is reserve without the zeroing, for a caller that writes
// every one of the n bytes (the address part of SAMPLE frames is most of
// what a profiler writes).
func (w *Writer) reserveDirty(n int) ([]byte, error) {
	if w.closed {
		return nil, ErrClosed
	}
	if w.err != nil {
		return nil, w.err
	}
	if len(w.buf)+n > w.size {
		if err := w.flushBuffer(); err != nil {
			return nil, err
		}
	}
	l := len(w.buf)
	w.buf = w.buf[:l+n]
	return w.buf[l : l+n], nil
}

// frameHeader fills all 24 bytes of the header of the frame b, padding
// included, so b need not be zeroed first.
func (w *Writer) frameHeader(b []byte, h *FrameHeader, t FrameType) {
	_ = b[FrameHeaderSize-1]
	if w.o.big {
		w.o.put16(b[0:], uint16(len(b)))
		w.o.put16(b[2:], uint16(h.CPU))
		w.o.put32(b[4:], uint32(h.PID))
	} else {
		binary.LittleEndian.PutUint64(b[0:], uint64(uint16(len(b)))|uint64(uint16(h.CPU))<<16|uint64(uint32(h.PID))<<32)
	}
	w.o.put64(b[8:], uint64(h.Time))
	// The type is byte 16 in either byte order; bytes 17-23 are padding.
	binary.LittleEndian.PutUint64(b[16:], uint64(t))
	w.counts[t]++
	if h.Time > w.end {
		w.end = h.Time
	}
}

func (w *Writer) flushBuffer() error {
	if len(w.buf) == 0 {
		return w.err
	}
	if w.err != nil {
		return w.err
	}
	base := w.written
	var n int
	var err error
	w.preallocate(len(w.buf))
	if w.rawFD >= 0 {
		n, err = unix.WriteFileRaw(w.rawFD, w.buf)
	} else {
		n, err = w.dst.Write(w.buf)
	}
	w.written += int64(n)
	if err == nil && n < len(w.buf) {
		err = io.ErrShortWrite
	}
	if err != nil {
		return w.writeFailed(base, [][]byte{w.buf}, n, err)
	}
	w.buf = w.buf[:0]
	return nil
}

// writeFailed handles the error err of a write of chunks, at file offset
// base, of which n bytes were written: a full disk can leave part of a
// frame in the file, so it is cut back to the last whole frame and the
// capture ends cleanly. The error is sticky.
func (w *Writer) writeFailed(base int64, chunks [][]byte, n int, err error) error {
	if t, ok := w.dst.(interface{ Truncate(int64) error }); ok && w.patch != nil {
		if keep := w.lastBoundary(base, chunks, n); keep < w.written && t.Truncate(keep) == nil {
			w.written = keep
		}
	}
	w.err = fmt.Errorf("write capture at offset %d: %w", w.written, err)
	w.fast = false
	w.buf = w.buf[:0]
	return w.err
}

// Flush writes pending JIT names and buffered frames, then patches the
// header's time range when possible. The end time is the latest of the
// frames written, the ranges given to ExtendTimeRange and the Clock.
func (w *Writer) Flush() error {
	if w.closed {
		return ErrClosed
	}
	err := w.flushJIT()
	if err == nil {
		err = w.flushBuffer()
	}
	if now := w.opts.Clock(); now != math.MinInt64 && now > w.end {
		w.end = now
	}
	if w.patch == nil {
		return err
	}
	// Patched even after a write error: rewriting header bytes needs no
	// new disk space, and a capture cut short by a full disk still gets
	// its time range.
	var b [16]byte
	w.o.put64(b[0:], uint64(w.start))
	w.o.put64(b[8:], uint64(w.end))
	if _, perr := w.patch.WriteAt(b[:], 72); perr != nil && err == nil {
		w.err = fmt.Errorf("patch capture header time range: %w", perr)
		w.fast = false
		return w.err
	}
	return err
}

// Close flushes the capture, frees the blocks reserved beyond its end,
// and closes the file if the Writer created it. It is idempotent.
func (w *Writer) Close() error {
	if w.closed {
		return nil
	}
	err := w.Flush()
	if perr := w.freePrealloc(); err == nil {
		err = perr
	}
	w.closed, w.fast = true, false
	if w.closer != nil {
		if cerr := w.closer.Close(); err == nil && cerr != nil && !errors.Is(cerr, os.ErrClosed) {
			err = cerr
		}
	}
	return err
}

// Preallocation bounds: blocks are reserved ahead of the writes by as
// many bytes as are written already, within these.
const (
	preallocMin = 1 << 20
	preallocMax = 64 << 20
)

// preallocate reserves the file's blocks for the next n bytes, and as
// many again as are written already (1 to 64 MiB), before they are
// written: with its blocks reserved, a write to ext4 no longer reserves
// and maps them page by page (delayed allocation). Writing 896 MB in
// 256 KiB writes to ext4 took 0.26 s of system time instead of 0.36 s
// (medians of 5, loaded machine; tmpfs: no change). Only for a regular
// file written from its start; a file system that refuses is not asked
// again, and a full one leaves the writes to fail.
func (w *Writer) preallocate(n int) {
	if w.rawFD < 0 || w.patch == nil || w.noPrealloc {
		return
	}
	end := w.written + int64(n)
	if end <= w.prealloc {
		return
	}
	from := max(w.prealloc, w.written)
	to := end + min(max(w.written, preallocMin), preallocMax)
	if err := unix.Preallocate(w.rawFD, from, to-from); err != nil {
		w.noPrealloc = true
		return
	}
	w.prealloc = to
}

// freePrealloc frees the blocks preallocate reserved beyond the file's
// end: a truncation to its own size.
func (w *Writer) freePrealloc() error {
	f, ok := w.dst.(*os.File)
	if !ok || w.prealloc == 0 {
		return nil
	}
	st, err := f.Stat()
	if err == nil && st.Size() < w.prealloc {
		err = unix.Ftruncate(w.rawFD, st.Size())
	}
	w.prealloc = 0
	if err != nil {
		return fmt.Errorf("free the blocks reserved beyond the capture's end: %w", err)
	}
	return nil
}

// lastBoundary returns the file offset of the end of the last whole frame
// (or of the header) among the first n bytes of chunks, written in order
// from file offset base; each chunk holds whole frames, the first one
// the header too when base is 0.
func (w *Writer) lastBoundary(base int64, chunks [][]byte, n int) int64 {
	done := 0 // bytes of the chunks before c
	for k, c := range chunks {
		off := 0
		if k == 0 && base == 0 {
			if n < HeaderSize {
				return 0
			}
			off = HeaderSize
		}
		for off+FrameHeaderSize <= len(c) && done+off+FrameHeaderSize <= n {
			l := int(w.o.u16(c[off:]))
			if l < FrameHeaderSize || done+off+l > n {
				break
			}
			off += l
		}
		if off < len(c) {
			return base + int64(done+off)
		}
		done += len(c)
	}
	return base + int64(done)
}

// captureTimeLayout is the header's ISO-8601 time: to the microsecond,
// without a fraction for a whole second, which is all libsysprof-capture
// writes (ISO-8601 readers, GLib's included, take the fraction). The
// captures of a split recording abut: one starts the microsecond the last
// one ends.
const captureTimeLayout = "2006-01-02T15:04:05.999999Z"
