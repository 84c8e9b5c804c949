//go:build !linux

package unix

import "os"

// StreamPair returns an error on systems other than Linux.
func StreamPair() (ours int, theirs *os.File, err error) { return -1, nil, errNonLinux("socketpair") }

// ReadNonblock returns an error on systems other than Linux.
func ReadNonblock(fd int, b []byte) (int, error) { return 0, errNonLinux("read") }

// SendFD returns an error on systems other than Linux.
func SendFD(fd int, data []byte, passfd int) error { return errNonLinux("sendmsg") }
