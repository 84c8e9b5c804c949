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
