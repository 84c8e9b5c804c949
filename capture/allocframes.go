package capture

import (
	"encoding/binary"
	"fmt"
	"io"

	"nsprof/internal/unix"
)

// directWriteMin is the size from which [Writer.AddAllocationFrames]
// writes its frames to the file from where they lie rather than through
// the buffer: below it a copy costs less than the system call.
const directWriteMin = 64 << 10

// AddAllocationFrames writes ALLOCATION frames the caller has already
// laid out: each of segs holds whole frames in the machine's byte order,
// byte for byte as [Writer.AddAllocation] would write them (cpu,
// padding and address count included), n frames in all, the latest at
// time last. It is the path of `record --memprof`, whose preload library
// lays its events out as such frames: from directWriteMin bytes on, and
// on a regular file, the buffered frames and segs go out in one
// writev(2), without segs being copied into the buffer; smaller runs are
// copied into it. A Writer of the other byte order decodes and encodes
// each frame. The frames are not checked beyond their lengths: the
// caller checks what it did not write itself. segs is not kept.
func (w *Writer) AddAllocationFrames(segs [][]byte, n int, last int64) error {
	if w.closed {
		return ErrClosed
	}
	if w.err != nil {
		return w.err
	}
	total := 0
	for _, s := range segs {
		total += len(s)
	}
	if !w.fast {
		return w.encodeAllocationFrames(segs)
	}
	if w.rawFD < 0 || total < directWriteMin {
		if err := w.copyFrames(segs); err != nil {
			return err
		}
	} else if err := w.writeDirect(segs, total); err != nil {
		return err
	}
	w.counts[TypeAllocation] += uint64(n)
	w.end = max(w.end, last)
	return nil
}

// writeDirect writes the buffer and then segs, total bytes, with one
// writev(2).
func (w *Writer) writeDirect(segs [][]byte, total int) error {
	chunks := make([][]byte, 0, len(segs)+1)
	chunks = append(append(chunks, w.buf), segs...)
	base := w.written
	w.preallocate(len(w.buf) + total)
	n, err := unix.WritevFileRaw(w.rawFD, chunks)
	w.written += int64(n)
	if err == nil && n < len(w.buf)+total {
		err = io.ErrShortWrite
	}
	if err != nil {
		return w.writeFailed(base, chunks, n, err)
	}
	w.buf = w.buf[:0]
	return nil
}

// copyFrames appends the frames of segs to the buffer, flushing it
// between two frames when it is full.
func (w *Writer) copyFrames(segs [][]byte) error {
	for _, s := range segs {
		for len(s) > 0 {
			k := frameCut(s, w.size-len(w.buf))
			if k == 0 {
				if len(w.buf) == 0 {
					return fmt.Errorf("write ALLOCATION frames: frame length %d of %d bytes left: %w", binary.NativeEndian.Uint16(s), len(s), ErrFrameTooLarge)
				}
				if err := w.flushBuffer(); err != nil {
					return err
				}
				continue
			}
			w.buf = append(w.buf, s[:k]...)
			s = s[k:]
		}
	}
	return nil
}

// frameCut returns the length of the longest run of whole frames at the
// start of s that is at most room bytes; 0 when the first does not fit
// or its length is not a frame's.
func frameCut(s []byte, room int) int {
	if len(s) <= room {
		return len(s)
	}
	k := 0
	for k+FrameHeaderSize <= len(s) {
		l := int(binary.NativeEndian.Uint16(s[k:]))
		if l < FrameHeaderSize || k+l > room {
			break
		}
		k += l
	}
	return k
}

// encodeAllocationFrames decodes the native frames of segs and writes
// each one as AddAllocation does, for a Writer whose byte order is not
// the machine's.
func (w *Writer) encodeAllocationFrames(segs [][]byte) error {
	ne := binary.NativeEndian
	var addrs []uint64
	for _, s := range segs {
		for len(s) > 0 {
			if len(s) < allocationFixed {
				return fmt.Errorf("write ALLOCATION frames: %d bytes left, less than a frame", len(s))
			}
			l := int(ne.Uint16(s))
			na := int(ne.Uint16(s[44:]))
			if l != allocationFixed+8*na || l > len(s) {
				return fmt.Errorf("write ALLOCATION frames: frame of %d bytes with %d addresses, %d bytes left", l, na, len(s))
			}
			addrs = addrs[:0]
			for i := range na {
				addrs = append(addrs, ne.Uint64(s[allocationFixed+8*i:]))
			}
			f := Allocation{
				FrameHeader: FrameHeader{CPU: int16(ne.Uint16(s[2:])), PID: int32(ne.Uint32(s[4:])), Time: int64(ne.Uint64(s[8:]))},
				Addr:        ne.Uint64(s[24:]), Size: int64(ne.Uint64(s[32:])), TID: int32(ne.Uint32(s[40:])), Addrs: addrs,
			}
			if err := w.writeAllocation(&f); err != nil {
				return err
			}
			s = s[l:]
		}
	}
	return nil
}
