//go:build !linux

package unix

import "syscall"

// PerfEventAttr mirrors Linux's struct perf_event_attr so that code building
// attributes compiles elsewhere.
type PerfEventAttr struct {
	Type               uint32
	Size               uint32
	Config             uint64
	Sample             uint64
	Sample_type        uint64
	Read_format        uint64
	Bits               uint64
	Wakeup             uint32
	Bp_type            uint32
	Ext1               uint64
	Ext2               uint64
	Branch_sample_type uint64
	Sample_regs_user   uint64
	Sample_stack_user  uint32
	Clockid            int32
	Sample_regs_intr   uint64
	Aux_watermark      uint32
	Sample_max_stack   uint16
	_                  uint16
	Aux_sample_size    uint32
	_                  uint32
	Sig_data           uint64
}

// PerfEventMmapPage mirrors Linux's struct perf_event_mmap_page.
type PerfEventMmapPage struct {
	Version        uint32
	Compat_version uint32
	Lock           uint32
	Index          uint32
	Offset         int64
	Time_enabled   uint64
	Time_running   uint64
	Capabilities   uint64
	Pmc_width      uint16
	Time_shift     uint16
	Time_mult      uint32
	Time_offset    uint64
	Time_zero      uint64
	Size           uint32
	_              uint32
	Time_cycles    uint64
	Time_mask      uint64
	_              [928]uint8
	Data_head      uint64
	Data_tail      uint64
	Data_offset    uint64
	Data_size      uint64
	Aux_head       uint64
	Aux_tail       uint64
	Aux_offset     uint64
	Aux_size       uint64
}

// EpollEvent mirrors Linux's struct epoll_event.
type EpollEvent struct {
	Events uint32
	Fd     int32
	Pad    int32
}

// Linux values of the perf_event_open, mmap, epoll and eventfd constants.
const (
	PERF_FLAG_FD_CLOEXEC      = 0x8
	PERF_FLAG_PID_CGROUP      = 0x4
	PERF_EVENT_IOC_ENABLE     = 0x2400
	PERF_EVENT_IOC_DISABLE    = 0x2401
	PERF_EVENT_IOC_SET_OUTPUT = 0x2405

	CLOCK_MONOTONIC = 0x1

	PROT_READ  = 0x1
	PROT_WRITE = 0x2
	MAP_SHARED = 0x1

	EPOLL_CLOEXEC = 0x80000
	EPOLL_CTL_ADD = 0x1
	EPOLL_CTL_DEL = 0x2
	EPOLLIN       = 0x1
	EPOLLERR      = 0x8
	EPOLLHUP      = 0x10

	EFD_CLOEXEC  = 0x80000
	EFD_NONBLOCK = 0x800

	E2BIG      = syscall.E2BIG
	EOPNOTSUPP = syscall.EOPNOTSUPP
	ENOSYS     = syscall.ENOSYS
	EMFILE     = syscall.EMFILE
)

// PerfEventOpen returns an error wrapping [ErrNotSupportedOnOS].
func PerfEventOpen(attr *PerfEventAttr, pid, cpu, groupFd, flags int) (int, error) {
	return -1, errNonLinux("perf_event_open")
}

// Mmap returns an error wrapping [ErrNotSupportedOnOS].
func Mmap(fd, length, prot, flags int) ([]byte, error) { return nil, errNonLinux("mmap") }

// Munmap returns an error wrapping [ErrNotSupportedOnOS].
func Munmap(b []byte) error { return errNonLinux("munmap") }

// IoctlSetInt returns an error wrapping [ErrNotSupportedOnOS].
func IoctlSetInt(fd int, req uint, value int) error { return errNonLinux("ioctl") }

// EpollCreate1 returns an error wrapping [ErrNotSupportedOnOS].
func EpollCreate1(flags int) (int, error) { return -1, errNonLinux("epoll_create1") }

// EpollCtl returns an error wrapping [ErrNotSupportedOnOS].
func EpollCtl(epfd, op, fd int, event *EpollEvent) error { return errNonLinux("epoll_ctl") }

// EpollWait returns an error wrapping [ErrNotSupportedOnOS].
func EpollWait(epfd int, events []EpollEvent, msec int) (int, error) {
	return 0, errNonLinux("epoll_wait")
}

// Eventfd returns an error wrapping [ErrNotSupportedOnOS].
func Eventfd(initval uint, flags int) (int, error) { return -1, errNonLinux("eventfd") }

// Read reads from fd.
func Read(fd int, p []byte) (int, error) { return syscall.Read(fd, p) }

// Write writes to fd.
func Write(fd int, p []byte) (int, error) { return syscall.Write(fd, p) }

// SetNonblock sets or clears O_NONBLOCK on fd.
func SetNonblock(fd int, nonblocking bool) error { return syscall.SetNonblock(fd, nonblocking) }

// DropPages does nothing here.
func DropPages(b []byte) error { return nil }

// DropRange does nothing: see DropPages.
func DropRange(start, length uint64) error { return nil }

// PerfEventID returns an error wrapping [ErrNotSupportedOnOS].
func PerfEventID(fd int) (uint64, error) { return 0, errNonLinux("ioctl") }
