//go:build !linux

package unix

import "os"

// SeqpacketPair returns an error on systems other than Linux.
func SeqpacketPair() (recv, send *os.File, err error) {
	return nil, nil, errNonLinux("socketpair")
}

// Message is one datagram received with [RecvFDs].
type Message struct {
	N         int
	FDs       []int
	PID       int32
	Truncated bool
}

// RecvFDs returns an error on systems other than Linux.
func RecvFDs(fd int, p, oob []byte) (Message, error) { return Message{}, errNonLinux("recvmsg") }

// OOBSpace returns 0 on systems other than Linux.
func OOBSpace(n int) int { return 0 }

// MmapShared returns an error on systems other than Linux.
func MmapShared(fd, length int) ([]byte, error) { return nil, errNonLinux("mmap") }

// FileSize returns an error on systems other than Linux.
func FileSize(fd int) (int64, error) { return 0, errNonLinux("fstat") }
