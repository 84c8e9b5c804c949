package capture

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
)

// FileHeader is the decoded 256-byte header of a capture.
type FileHeader struct {
	// Version is the format version; always 1 so far. Not checked, as
	// Sysprof does not check it either.
	Version uint8
	// BigEndian says the frames are big-endian.
	BigEndian bool
	// CaptureTime is the ISO-8601 UTC wall-clock creation time.
	CaptureTime string
	// StartTime and EndTime bound the capture on the capture clock. EndTime
	// may be 0 or before StartTime in files that were not flushed.
	StartTime int64
	EndTime   int64
	// LastFrameIndex is Sysprof 51's offset of the last frame-index frame,
	// or 0.
	LastFrameIndex uint64
}

// ReaderOptions configures a [Reader]. The zero value is the default.
type ReaderOptions struct {
	// AllowUnknown returns frames of unknown types as [*Unknown] instead of
	// stopping with a [*FormatError]. Type 0 is always an error.
	AllowUnknown bool
}

// Reader decodes the frames of a capture in file order. It is not safe for
// concurrent use.
type Reader struct {
	r *bufio.Reader
	// data is the whole capture when the Reader reads from memory
	// ([NewBytesReader]); r is nil then.
	data   []byte
	closer io.Closer
	hdr    FileHeader
	o      order
	opts   ReaderOptions
	off    int64
	err    error
}

// NewReader reads the header of the capture in r.
func NewReader(r io.Reader) (*Reader, error) {
	return NewReaderWithOptions(r, ReaderOptions{})
}

// NewReaderWithOptions reads the header of the capture in r with options.
func NewReaderWithOptions(r io.Reader, opts ReaderOptions) (*Reader, error) {
	br := bufio.NewReaderSize(r, 128*1024)
	h := make([]byte, HeaderSize)
	if n, err := io.ReadFull(br, h); err != nil {
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			return nil, &FormatError{Off: int64(n), Msg: "truncated file header", Val: fmt.Sprintf("%d of %d bytes", n, HeaderSize)}
		}
		return nil, fmt.Errorf("read capture header: %w", err)
	}
	rd := &Reader{r: br, opts: opts, off: HeaderSize}
	if err := rd.readHeader(h); err != nil {
		return nil, err
	}
	return rd, nil
}

// NewBytesReader returns a Reader over the capture held whole in data,
// which it reads in place: frames are not copied before they are decoded,
// and the views [Reader.NextRaw] returns stay valid as long as data does.
// data must not change while the Reader is in use.
func NewBytesReader(data []byte, opts ReaderOptions) (*Reader, error) {
	if len(data) < HeaderSize {
		return nil, &FormatError{Off: int64(len(data)), Msg: "truncated file header", Val: fmt.Sprintf("%d of %d bytes", len(data), HeaderSize)}
	}
	rd := &Reader{data: data, opts: opts, off: HeaderSize}
	if err := rd.readHeader(data[:HeaderSize]); err != nil {
		return nil, err
	}
	return rd, nil
}

// readHeader checks the magic of the file header h and decodes it.
func (rd *Reader) readHeader(h []byte) error {
	if m := binary.LittleEndian.Uint32(h); m != Magic {
		if string(h[:7]) == "PERFILE" || string(h[:8]) == "PERFFILE" {
			// perf record's file, which users hand to report as
			// they would to perf report.
			return &FormatError{Off: 0, Msg: "a perf.data file (perf record's), not a Sysprof capture (nsprof record writes those)"}
		}
		return &FormatError{Off: 0, Msg: "bad magic, not a Sysprof capture", Val: fmt.Sprintf("%#08x", m)}
	}
	// little_endian is bit 0 of byte 5 on little-endian files and bit 7 of
	// byte 5 (always 0) on big-endian ones; big-endian writers leave it 0.
	rd.o = order{big: h[5]&1 == 0}
	word := rd.o.u32(h[4:])
	rd.hdr = FileHeader{
		Version:        uint8(rd.o.bits(word, 0, 8)),
		BigEndian:      rd.o.big,
		CaptureTime:    fieldString(h[8 : 8+captureTimeLen]),
		StartTime:      int64(rd.o.u64(h[72:])),
		EndTime:        int64(rd.o.u64(h[80:])),
		LastFrameIndex: rd.o.u64(h[88:]),
	}
	return nil
}

// Open opens the capture file at path. Close the Reader to close the file.
func Open(path string) (*Reader, error) {
	return OpenWithOptions(path, ReaderOptions{})
}

// OpenWithOptions is [Open] with options.
func OpenWithOptions(path string, opts ReaderOptions) (*Reader, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	r, err := NewReaderWithOptions(f, opts)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	r.closer = f
	return r, nil
}

// Header returns the file header.
func (r *Reader) Header() FileHeader { return r.hdr }

// Offset returns the file offset of the next frame.
func (r *Reader) Offset() int64 { return r.off }

// Next returns the next frame. At the clean end of the capture it returns
// io.EOF. On damaged input it returns a [*FormatError] naming the offset of
// the damaged frame, and keeps returning it; every frame before the damage
// has been returned. Sysprof 51's frame-index TIMESTAMP frames are skipped.
func (r *Reader) Next() (Frame, error) {
	b, err := r.next()
	if err != nil {
		return nil, err
	}
	f, err := decodeFrame(r.o, b, r.off-int64(len(b)), r.opts.AllowUnknown)
	if err != nil {
		r.err = err
		return nil, err
	}
	return f, nil
}

// next returns the bytes of the next frame that is not a frame-index
// TIMESTAMP, or the error that stopped reading (remembered).
func (r *Reader) next() ([]byte, error) {
	for {
		if r.err != nil {
			return nil, r.err
		}
		var b []byte
		var err error
		if r.data != nil {
			b, err = r.nextInPlace()
		} else {
			b, err = r.nextRaw()
		}
		if err != nil {
			r.err = err
			return nil, err
		}
		if b[16] == byte(TypeTimestamp) && len(b) == 32 {
			if p := binary.LittleEndian.Uint32(b[20:]); p == frameIndexMagic || p == swap32(frameIndexMagic) {
				continue
			}
		}
		return b, nil
	}
}

func swap32(v uint32) uint32 { return v>>24 | v>>8&0xff00 | v<<8&0xff0000 | v<<24 }

// nextRaw returns a view of the next frame in r's buffer, without copying
// it, and advances the offset. The view is valid until the next read.
func (r *Reader) nextRaw() ([]byte, error) {
	start := r.off
	hb, err := r.r.Peek(FrameHeaderSize)
	if len(hb) < FrameHeaderSize {
		switch {
		case len(hb) == 0 && err == io.EOF:
			return nil, io.EOF
		case err == io.EOF:
			return nil, &FormatError{Off: start, Msg: "truncated frame header", Val: fmt.Sprintf("%d of %d bytes", len(hb), FrameHeaderSize)}
		}
		return nil, fmt.Errorf("read capture at offset %d: %w", start, err)
	}
	l := int(r.o.u16(hb))
	switch {
	case l < FrameHeaderSize:
		return nil, &FormatError{Off: start, Msg: "frame length shorter than its header", Val: l}
	case l%Align != 0:
		return nil, &FormatError{Off: start, Msg: "frame length not a multiple of 8", Val: l}
	case hb[16] == 0:
		return nil, &FormatError{Off: start, Msg: "invalid frame type", Val: 0}
	}
	fb, err := r.r.Peek(l)
	if len(fb) < l {
		if err == io.EOF {
			return nil, &FormatError{Off: start, Msg: "frame claims more bytes than remain", Val: fmt.Sprintf("%d claimed, %d present", l, len(fb))}
		}
		return nil, fmt.Errorf("read capture at offset %d: %w", start, err)
	}
	r.r.Discard(l)
	r.off += int64(l)
	return fb[:l:l], nil
}

// nextInPlace returns the next frame of r.data without copying it and
// advances the offset; it checks what nextRaw checks.
func (r *Reader) nextInPlace() ([]byte, error) {
	start := r.off
	rest := r.data[start:]
	switch {
	case len(rest) == 0:
		return nil, io.EOF
	case len(rest) < FrameHeaderSize:
		return nil, &FormatError{Off: start, Msg: "truncated frame header", Val: fmt.Sprintf("%d of %d bytes", len(rest), FrameHeaderSize)}
	}
	l := int(r.o.u16(rest))
	switch {
	case l < FrameHeaderSize:
		return nil, &FormatError{Off: start, Msg: "frame length shorter than its header", Val: l}
	case l%Align != 0:
		return nil, &FormatError{Off: start, Msg: "frame length not a multiple of 8", Val: l}
	case rest[16] == 0:
		return nil, &FormatError{Off: start, Msg: "invalid frame type", Val: 0}
	case l > len(rest):
		return nil, &FormatError{Off: start, Msg: "frame claims more bytes than remain", Val: fmt.Sprintf("%d claimed, %d present", l, len(rest))}
	}
	r.off += int64(l)
	return rest[:l:l], nil
}

// Close closes the file if the Reader opened it. It is idempotent; Next
// returns [ErrClosed] afterwards.
func (r *Reader) Close() error {
	if r.err == nil || !errors.Is(r.err, ErrClosed) {
		r.err = fmt.Errorf("read capture: %w", ErrClosed)
	}
	if r.closer != nil {
		c := r.closer
		r.closer = nil
		return c.Close()
	}
	return nil
}
