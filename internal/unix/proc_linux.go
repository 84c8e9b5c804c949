//go:build linux

package unix

import (
	"os"

	"golang.org/x/sys/unix"
)

// StatDevIno returns the device numbers and inode number of the file at
// path, following symbolic links and /proc magic links such as
// /proc/PID/exe. Errors are *os.PathError values naming path.
func StatDevIno(path string) (major, minor uint32, ino uint64, err error) {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return 0, 0, 0, &os.PathError{Op: "stat", Path: path, Err: err}
	}
	dev := uint64(st.Dev) //nolint:unconvert // Dev is uint32 on some architectures.
	return unix.Major(dev), unix.Minor(dev), st.Ino, nil
}
