//go:build !linux

package unix

import "syscall"

// WriteFileRaw writes all of b to fd; see the Linux version.
func WriteFileRaw(fd int, b []byte) (int, error) {
	n := 0
	for n < len(b) {
		r, err := syscall.Write(fd, b[n:])
		if err != nil {
			return n, err
		}
		n += r
	}
	return n, nil
}

// WritevFileRaw writes all of bufs, in order, to fd; see the Linux
// version.
func WritevFileRaw(fd int, bufs [][]byte) (int, error) {
	total := 0
	for _, b := range bufs {
		n, err := WriteFileRaw(fd, b)
		total += n
		if err != nil {
			return total, err
		}
	}
	return total, nil
}

// Preallocate is not supported off Linux.
func Preallocate(fd int, off, n int64) error { return errNonLinux("fallocate") }
