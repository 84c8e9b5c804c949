//go:build linux

package unix

import (
	"os"

	"golang.org/x/sys/unix"
)

// SeqpacketPair returns a connected AF_UNIX SOCK_SEQPACKET pair, both ends
// close-on-exec. The first end receives the peer's credentials
// (SO_PASSCRED) with every message, pids translated by the kernel into
// the receiver's PID namespace.
func SeqpacketPair() (recv, send *os.File, err error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, os.NewSyscallError("socketpair", err)
	}
	if err := unix.SetsockoptInt(fds[0], unix.SOL_SOCKET, unix.SO_PASSCRED, 1); err != nil {
		unix.Close(fds[0])
		unix.Close(fds[1])
		return nil, nil, os.NewSyscallError("setsockopt SO_PASSCRED", err)
	}
	return os.NewFile(uintptr(fds[0]), "memprof-recv"), os.NewFile(uintptr(fds[1]), "memprof-send"), nil
}

// Message is one datagram received with [RecvFDs].
type Message struct {
	// N is the number of data bytes.
	N int
	// FDs are the descriptors passed with SCM_RIGHTS, close-on-exec; the
	// caller owns them.
	FDs []int
	// PID is the sender's process id from SCM_CREDENTIALS, 0 if absent.
	PID int32
	// Truncated says data or descriptors did not fit.
	Truncated bool
}

// RecvFDs receives one message without blocking; it returns EAGAIN when
// none is queued.
func RecvFDs(fd int, p, oob []byte) (Message, error) {
	n, oobn, flags, _, err := unix.Recvmsg(fd, p, oob, unix.MSG_DONTWAIT|unix.MSG_CMSG_CLOEXEC)
	if err != nil {
		return Message{}, err
	}
	m := Message{N: n, Truncated: flags&(unix.MSG_TRUNC|unix.MSG_CTRUNC) != 0}
	msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
	if err != nil {
		return m, nil
	}
	for i := range msgs {
		if fds, err := unix.ParseUnixRights(&msgs[i]); err == nil {
			m.FDs = append(m.FDs, fds...)
		} else if c, err := unix.ParseUnixCredentials(&msgs[i]); err == nil {
			m.PID = c.Pid
		}
	}
	return m, nil
}

// OOBSpace returns the control buffer size for n descriptors and
// credentials.
func OOBSpace(n int) int {
	return unix.CmsgSpace(4*n) + unix.CmsgSpace(unix.SizeofUcred)
}

// MmapShared maps length bytes of fd read-write, shared.
func MmapShared(fd, length int) ([]byte, error) {
	b, err := unix.Mmap(fd, 0, length, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, os.NewSyscallError("mmap", err)
	}
	return b, nil
}

// FileSize returns the size of the file open as fd.
func FileSize(fd int) (int64, error) {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return 0, os.NewSyscallError("fstat", err)
	}
	return st.Size, nil
}
