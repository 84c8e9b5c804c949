//go:build linux

package unix

import (
	"slices"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// WriteFileRaw writes all of b to the regular file fd with write(2) called
// without telling the Go scheduler. A write to the page cache of a regular
// file takes long enough (100 µs and more for 256 KiB) that the runtime
// hands the goroutine's P to another thread during an ordinary syscall,
// costing two context switches a write; for a profiler flushing a capture
// buffer that is pure overhead. Use it only for regular files, where
// write(2) does not wait for another process. It retries on EINTR and
// after short writes; on error it returns the bytes written so far.
func WriteFileRaw(fd int, b []byte) (int, error) {
	n := 0
	for n < len(b) {
		r, _, errno := unix.RawSyscall(unix.SYS_WRITE, uintptr(fd), uintptr(unsafe.Pointer(&b[n])), uintptr(len(b)-n))
		switch {
		case errno == unix.EINTR:
			continue
		case errno != 0:
			return n, syscall.Errno(errno)
		case r == 0:
			return n, syscall.EIO
		}
		n += int(r)
	}
	return n, nil
}

// iovMax is the most buffers one writev(2) takes (IOV_MAX).
const iovMax = 1024

// WritevFileRaw writes all of bufs, in order, to the regular file fd with
// writev(2), called as [WriteFileRaw] calls write(2): the buffers reach
// the file without being copied together first. It retries on EINTR and
// after short writes; on error it returns the bytes written so far.
func WritevFileRaw(fd int, bufs [][]byte) (int, error) {
	bufs = slices.Clone(bufs) // resliced below after short writes
	iov := make([]unix.Iovec, 0, min(len(bufs), iovMax))
	total := 0
	for len(bufs) > 0 {
		iov = iov[:0]
		for _, b := range bufs {
			if len(iov) == iovMax {
				break
			}
			if len(b) > 0 {
				iov = append(iov, unix.Iovec{Base: &b[0], Len: uint64(len(b))})
			}
		}
		if len(iov) == 0 {
			return total, nil
		}
		r, _, errno := unix.RawSyscall(unix.SYS_WRITEV, uintptr(fd), uintptr(unsafe.Pointer(&iov[0])), uintptr(len(iov)))
		switch {
		case errno == unix.EINTR:
			continue
		case errno != 0:
			return total, syscall.Errno(errno)
		case r == 0:
			return total, syscall.EIO
		}
		total += int(r)
		// Drop what was written: whole buffers, then part of one.
		for n := int(r); n > 0; {
			if len(bufs[0]) <= n {
				n -= len(bufs[0])
				bufs = bufs[1:]
				continue
			}
			bufs[0] = bufs[0][n:]
			n = 0
		}
	}
	return total, nil
}

// Preallocate reserves the blocks of bytes [off, off+n) of the regular
// file fd (fallocate(2) with FALLOC_FL_KEEP_SIZE): the file's size does
// not change, and later writes there find their blocks allocated. A
// truncation to the file's size frees what was not written.
func Preallocate(fd int, off, n int64) error {
	for {
		err := unix.Fallocate(fd, unix.FALLOC_FL_KEEP_SIZE, off, n)
		if err != unix.EINTR {
			return err
		}
	}
}
