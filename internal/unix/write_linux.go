//go:build linux

package unix

import (
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
