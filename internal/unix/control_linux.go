//go:build linux

package unix

import (
	"os"

	"golang.org/x/sys/unix"
)

// StreamPair returns a connected AF_UNIX SOCK_STREAM pair, both ends
// close-on-exec: ours, a raw non-blocking descriptor that receives the
// writer's credentials with what it reads (SO_PASSCRED; read it with
// [RecvFDs]), and theirs, for a child (Sysprof's SYSPROF_CONTROL_FD).
func StreamPair() (ours int, theirs *os.File, err error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, nil, os.NewSyscallError("socketpair", err)
	}
	if err := unix.SetNonblock(fds[0], true); err != nil {
		unix.Close(fds[0])
		unix.Close(fds[1])
		return -1, nil, os.NewSyscallError("fcntl O_NONBLOCK", err)
	}
	if err := unix.SetsockoptInt(fds[0], unix.SOL_SOCKET, unix.SO_PASSCRED, 1); err != nil {
		unix.Close(fds[0])
		unix.Close(fds[1])
		return -1, nil, os.NewSyscallError("setsockopt SO_PASSCRED", err)
	}
	return fds[0], os.NewFile(uintptr(fds[1]), "control-child"), nil
}

// SendFD sends data with the descriptor passfd attached (SCM_RIGHTS).
func SendFD(fd int, data []byte, passfd int) error {
	return os.NewSyscallError("sendmsg", unix.Sendmsg(fd, data, unix.UnixRights(passfd), nil, 0))
}

// PollReadable waits up to timeout milliseconds (-1: for ever) for fd to
// become readable, or hung up, and reports whether it did.
func PollReadable(fd, timeout int) (bool, error) {
	p := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	n, err := unix.Poll(p, timeout)
	if err != nil {
		return false, os.NewSyscallError("poll", err)
	}
	return n > 0, nil
}

// PollPriority reports whether fd has an exceptional condition pending
// (POLLPRI or POLLERR), without waiting: for /proc/PID/mountinfo, that
// its mount namespace's mount table changed since the file was opened or
// last polled.
func PollPriority(fd int) (bool, error) {
	p := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLPRI}}
	n, err := unix.Poll(p, 0)
	if err != nil {
		return false, os.NewSyscallError("poll", err)
	}
	return n > 0 && p[0].Revents&(unix.POLLPRI|unix.POLLERR) != 0, nil
}

// OpenUnpolled opens path read-only as a blocking file that the Go
// runtime's poller leaves alone: os.Open adds a file that can be polled
// (as /proc/PID/mountinfo can) to the runtime's epoll, whose wake-ups
// consume the event a later PollPriority is to see.
func OpenUnpolled(path string) (*os.File, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	return os.NewFile(uintptr(fd), path), nil
}
