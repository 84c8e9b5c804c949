//go:build linux

package unix

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// PerfEventAttr is struct perf_event_attr.
type PerfEventAttr = unix.PerfEventAttr

// PerfEventMmapPage is struct perf_event_mmap_page, the metadata page at the
// start of a perf ring buffer mapping.
type PerfEventMmapPage = unix.PerfEventMmapPage

// EpollEvent is struct epoll_event. Only Events and Fd are portable field
// names; the padding differs between architectures.
type EpollEvent = unix.EpollEvent

// Constants for perf_event_open, mmap, epoll and eventfd.
const (
	PERF_FLAG_FD_CLOEXEC      = unix.PERF_FLAG_FD_CLOEXEC
	PERF_FLAG_PID_CGROUP      = unix.PERF_FLAG_PID_CGROUP
	PERF_EVENT_IOC_ENABLE     = unix.PERF_EVENT_IOC_ENABLE
	PERF_EVENT_IOC_DISABLE    = unix.PERF_EVENT_IOC_DISABLE
	PERF_EVENT_IOC_SET_OUTPUT = unix.PERF_EVENT_IOC_SET_OUTPUT

	CLOCK_MONOTONIC = unix.CLOCK_MONOTONIC

	PROT_READ  = unix.PROT_READ
	PROT_WRITE = unix.PROT_WRITE
	MAP_SHARED = unix.MAP_SHARED

	EPOLL_CLOEXEC = unix.EPOLL_CLOEXEC
	EPOLL_CTL_ADD = unix.EPOLL_CTL_ADD
	EPOLL_CTL_DEL = unix.EPOLL_CTL_DEL
	EPOLLIN       = unix.EPOLLIN
	EPOLLERR      = unix.EPOLLERR
	EPOLLHUP      = unix.EPOLLHUP

	EFD_CLOEXEC  = unix.EFD_CLOEXEC
	EFD_NONBLOCK = unix.EFD_NONBLOCK

	E2BIG      = unix.E2BIG
	EOPNOTSUPP = unix.EOPNOTSUPP
	ENOSYS     = unix.ENOSYS
	EMFILE     = unix.EMFILE
)

// PerfEventOpen calls perf_event_open(2).
func PerfEventOpen(attr *PerfEventAttr, pid, cpu, groupFd, flags int) (int, error) {
	return unix.PerfEventOpen(attr, pid, cpu, groupFd, flags)
}

// Mmap maps length bytes of fd from offset 0.
func Mmap(fd, length, prot, flags int) ([]byte, error) {
	return unix.Mmap(fd, 0, length, prot, flags)
}

// Munmap unmaps a mapping returned by [Mmap].
func Munmap(b []byte) error { return unix.Munmap(b) }

// DropPages tells the kernel the pages of b, part of a read-only file
// mapping, are not needed for now (madvise MADV_DONTNEED): they leave the
// process's resident set, and are read again from the page cache if
// touched. b must start on a page boundary.
func DropPages(b []byte) error { return unix.Madvise(b, unix.MADV_DONTNEED) }

// DropRange is DropPages for [start, start+length), a page-aligned range
// of the calling process's mappings outside Go's memory (its executable's,
// see package exepages). In a private file mapping the pages the process
// did not write are read again from the file when next touched; pages it
// wrote are lost, so the caller must know there are none.
func DropRange(start, length uint64) error {
	_, _, e := unix.Syscall(unix.SYS_MADVISE, uintptr(start), uintptr(length), unix.MADV_DONTNEED)
	if e != 0 {
		return e
	}
	return nil
}

// IoctlSetInt calls ioctl(fd, req, value).
func IoctlSetInt(fd int, req uint, value int) error { return unix.IoctlSetInt(fd, req, value) }

// EpollCreate1 creates an epoll instance.
func EpollCreate1(flags int) (int, error) { return unix.EpollCreate1(flags) }

// EpollCtl adds, modifies or removes fd in the epoll instance epfd.
func EpollCtl(epfd, op, fd int, event *EpollEvent) error {
	return unix.EpollCtl(epfd, op, fd, event)
}

// EpollWait waits up to msec milliseconds (-1: forever) for events on epfd.
func EpollWait(epfd int, events []EpollEvent, msec int) (int, error) {
	return unix.EpollWait(epfd, events, msec)
}

// Eventfd creates an eventfd counter.
func Eventfd(initval uint, flags int) (int, error) { return unix.Eventfd(initval, flags) }

// Read reads from fd.
func Read(fd int, p []byte) (int, error) { return unix.Read(fd, p) }

// Write writes to fd.
func Write(fd int, p []byte) (int, error) { return unix.Write(fd, p) }

// SetNonblock sets or clears O_NONBLOCK on fd.
func SetNonblock(fd int, nonblocking bool) error { return unix.SetNonblock(fd, nonblocking) }

// PerfEventID returns the id the kernel gave perf event fd
// (PERF_EVENT_IOC_ID): the PERF_SAMPLE_IDENTIFIER of its samples, and of
// the samples of the events its children inherit.
func PerfEventID(fd int) (uint64, error) {
	var id uint64
	_, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), uintptr(unix.PERF_EVENT_IOC_ID), uintptr(unsafe.Pointer(&id)))
	if errno != 0 {
		return 0, errno
	}
	return id, nil
}
