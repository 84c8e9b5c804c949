//go:build linux

package unix

import (
	"golang.org/x/sys/unix"
)

// Errno values and flags used across nsprof.
const (
	EINTR       = unix.EINTR
	EAGAIN      = unix.EAGAIN
	EACCES      = unix.EACCES
	EPERM       = unix.EPERM
	ENOENT      = unix.ENOENT
	ENOSPC      = unix.ENOSPC
	ENODEV      = unix.ENODEV
	ESRCH       = unix.ESRCH
	EBADF       = unix.EBADF
	EINVAL      = unix.EINVAL
	MFD_CLOEXEC = unix.MFD_CLOEXEC
)

// Errno is the system error number type.
type Errno = unix.Errno

// MonotonicNow returns CLOCK_MONOTONIC in nanoseconds, the clock Sysprof
// captures and nsprof's perf events share.
func MonotonicNow() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		return 0
	}
	return ts.Nano()
}

// Dup duplicates fd with close-on-exec set.
func Dup(fd int) (int, error) {
	return unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0)
}

// Ftruncate truncates the file behind fd to size bytes.
func Ftruncate(fd int, size int64) error { return unix.Ftruncate(fd, size) }

// MemfdCreate creates an anonymous memory-backed file.
func MemfdCreate(name string, flags int) (int, error) { return unix.MemfdCreate(name, flags) }

// Close closes fd.
func Close(fd int) error { return unix.Close(fd) }

// Getpagesize returns the system page size.
func Getpagesize() int { return unix.Getpagesize() }
