//go:build linux

package unix

import (
	"fmt"
	"os"
	"strconv"
	"syscall"

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

// SignalName returns the signal's name, such as "SIGSEGV".
func SignalName(s syscall.Signal) string {
	if n := unix.SignalName(s); n != "" {
		return n
	}
	return s.String()
}

// IsTerminal reports whether fd is a terminal.
func IsTerminal(fd int) bool {
	_, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	return err == nil
}

// TerminalWidth returns the width of the terminal at fd, or 0.
func TerminalWidth(fd int) int {
	ws, err := unix.IoctlGetWinsize(fd, unix.TIOCGWINSZ)
	if err != nil {
		return 0
	}
	return int(ws.Col)
}

// OpenPTY opens a new pseudo-terminal pair from /dev/ptmx: what is
// written to tty is read from ptm. For tests of output meant for a
// terminal.
func OpenPTY() (ptm, tty *os.File, err error) {
	ptm, err = os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		return nil, nil, err
	}
	fd := int(ptm.Fd())
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
		ptm.Close()
		return nil, nil, fmt.Errorf("unlock /dev/ptmx: %w", err)
	}
	n, err := unix.IoctlGetInt(fd, unix.TIOCGPTN)
	if err != nil {
		ptm.Close()
		return nil, nil, fmt.Errorf("pty number of /dev/ptmx: %w", err)
	}
	name := "/dev/pts/" + strconv.Itoa(n)
	tty, err = os.OpenFile(name, os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		ptm.Close()
		return nil, nil, err
	}
	return ptm, tty, nil
}

// Utsname holds the fields of uname(2).
type Utsname struct {
	Sysname, Nodename, Release, Version, Machine string
}

// Uname returns the kernel's identification.
func Uname() (Utsname, error) {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return Utsname{}, err
	}
	s := func(b []byte) string {
		for i, c := range b {
			if c == 0 {
				return string(b[:i])
			}
		}
		return string(b)
	}
	return Utsname{s(u.Sysname[:]), s(u.Nodename[:]), s(u.Release[:]), s(u.Version[:]), s(u.Machine[:])}, nil
}

// MountTracefs mounts tracefs at dir.
func MountTracefs(dir string) error {
	return unix.Mount("nodev", dir, "tracefs", 0, "")
}
