//go:build !linux

package unix

import "os"

// StreamPair returns an error on systems other than Linux.
func StreamPair() (ours int, theirs *os.File, err error) { return -1, nil, errNonLinux("socketpair") }

// SendFD returns an error on systems other than Linux.
func SendFD(fd int, data []byte, passfd int) error { return errNonLinux("sendmsg") }

// PollReadable returns an error on systems other than Linux.
func PollReadable(fd, timeout int) (bool, error) { return false, errNonLinux("poll") }

// PollPriority returns an error wrapping [ErrNotSupportedOnOS].
func PollPriority(fd int) (bool, error) { return false, errNonLinux("poll") }

// OpenUnpolled is os.Open here.
func OpenUnpolled(path string) (*os.File, error) { return os.Open(path) }
