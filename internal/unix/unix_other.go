//go:build !linux

package unix

import (
	"os"
	"syscall"
	"time"
)

// Errno values used across nsprof.
const (
	EINTR       = syscall.EINTR
	EAGAIN      = syscall.EAGAIN
	EACCES      = syscall.EACCES
	EPERM       = syscall.EPERM
	ENOENT      = syscall.ENOENT
	ENOSPC      = syscall.ENOSPC
	ENODEV      = syscall.ENODEV
	ESRCH       = syscall.ESRCH
	EBADF       = syscall.EBADF
	EINVAL      = syscall.EINVAL
	MFD_CLOEXEC = 1
)

// Errno is the system error number type.
type Errno = syscall.Errno

var start = time.Now()

// MonotonicNow returns a monotonic time in nanoseconds.
func MonotonicNow() int64 { return int64(time.Since(start)) }

// Dup duplicates fd.
func Dup(fd int) (int, error) { return -1, errNonLinux("dup") }

// Ftruncate truncates the file behind fd.
func Ftruncate(fd int, size int64) error { return errNonLinux("ftruncate") }

// MemfdCreate creates an anonymous memory-backed file.
func MemfdCreate(name string, flags int) (int, error) { return -1, errNonLinux("memfd_create") }

// Close closes fd.
func Close(fd int) error { return syscall.Close(fd) }

// Getpagesize returns the system page size.
func Getpagesize() int { return syscall.Getpagesize() }

// SignalName returns the signal's name.
func SignalName(s syscall.Signal) string { return s.String() }

// IsTerminal reports whether fd is a terminal.
func IsTerminal(fd int) bool { return false }

// TerminalWidth returns the width of the terminal at fd, or 0.
func TerminalWidth(fd int) int { return 0 }

// OpenPTY opens a pseudo-terminal pair; not supported off Linux.
func OpenPTY() (ptm, tty *os.File, err error) { return nil, nil, errNonLinux("open /dev/ptmx") }

// Utsname holds the fields of uname(2).
type Utsname struct {
	Sysname, Nodename, Release, Version, Machine string
}

// Uname returns the kernel's identification.
func Uname() (Utsname, error) { return Utsname{}, errNonLinux("uname") }

// MountTracefs mounts tracefs at dir.
func MountTracefs(dir string) error { return errNonLinux("mount tracefs") }
