//go:build linux

package unix

import (
	"os"
	"runtime"

	"golang.org/x/sys/unix"
)

// Flags for opening files inside another process's root (package container).
const (
	O_RDONLY    = unix.O_RDONLY
	O_PATH      = unix.O_PATH
	O_DIRECTORY = unix.O_DIRECTORY
	O_NOFOLLOW  = unix.O_NOFOLLOW
	O_CLOEXEC   = unix.O_CLOEXEC
	O_NONBLOCK  = unix.O_NONBLOCK

	RESOLVE_IN_ROOT       = unix.RESOLVE_IN_ROOT
	RESOLVE_NO_MAGICLINKS = unix.RESOLVE_NO_MAGICLINKS
	RESOLVE_NO_XDEV       = unix.RESOLVE_NO_XDEV
	RESOLVE_NO_SYMLINKS   = unix.RESOLVE_NO_SYMLINKS
	RESOLVE_BENEATH       = unix.RESOLVE_BENEATH

	S_IFMT  = unix.S_IFMT
	S_IFCHR = unix.S_IFCHR
	S_IFDIR = unix.S_IFDIR
	S_IFREG = unix.S_IFREG

	ENODATA = unix.ENODATA
	EXDEV   = unix.EXDEV
	ELOOP   = unix.ELOOP
	ENOTDIR = unix.ENOTDIR
)

// FileID is the identity and type of a file, from fstat(2).
type FileID struct {
	Dev  uint64 // st_dev, as Mkdev(major, minor)
	Ino  uint64
	Mode uint32 // st_mode: type and permission bits
	Rdev uint64 // st_rdev, for device files (overlay whiteouts are 0/0 char devices)
	Uid  uint32
}

// Mkdev returns the dev_t of a major and minor device number.
func Mkdev(major, minor uint32) uint64 { return unix.Mkdev(major, minor) }

// Major returns the major number of a dev_t.
func Major(dev uint64) uint32 { return unix.Major(dev) }

// Minor returns the minor number of a dev_t.
func Minor(dev uint64) uint32 { return unix.Minor(dev) }

// OpenPathDir opens the directory at path with O_PATH|O_DIRECTORY, following
// symbolic and /proc magic links: opening /proc/PID/root pins the process's
// root directory, mount included.
func OpenPathDir(path string) (*os.File, error) {
	fd, err := unix.Open(path, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	return os.NewFile(uintptr(fd), path), nil
}

// Openat2 calls openat2(2) on path relative to the directory dir with the
// open flags (O_CLOEXEC is added) and RESOLVE_* flags resolve. name names the
// returned file. Errors are *os.PathError values naming name.
func Openat2(dir *os.File, path string, flags int, resolve uint64, name string) (*os.File, error) {
	how := unix.OpenHow{Flags: uint64(flags | unix.O_CLOEXEC), Resolve: resolve}
	var fd int
	var err error
	for {
		fd, err = unix.Openat2(int(dir.Fd()), path, &how)
		if err != unix.EINTR && err != unix.EAGAIN {
			break
		}
	}
	runtime.KeepAlive(dir)
	if err != nil {
		return nil, &os.PathError{Op: "openat2", Path: name, Err: err}
	}
	return os.NewFile(uintptr(fd), name), nil
}

// Fstat returns the identity of the open file f (O_PATH files included).
func Fstat(f *os.File) (FileID, error) {
	var st unix.Stat_t
	err := unix.Fstat(int(f.Fd()), &st)
	runtime.KeepAlive(f)
	if err != nil {
		return FileID{}, &os.PathError{Op: "fstat", Path: f.Name(), Err: err}
	}
	return FileID{
		Dev:  uint64(st.Dev), //nolint:unconvert // Dev is uint32 on some architectures.
		Ino:  st.Ino,
		Mode: st.Mode,
		Rdev: uint64(st.Rdev), //nolint:unconvert
		Uid:  st.Uid,
	}, nil
}

// Fgetxattr reads the extended attribute name of the open file f (not an
// O_PATH file). It returns ENODATA when the attribute is absent.
func Fgetxattr(f *os.File, name string) ([]byte, error) {
	buf := make([]byte, 256)
	n, err := unix.Fgetxattr(int(f.Fd()), name, buf)
	runtime.KeepAlive(f)
	if err != nil {
		return nil, err
	}
	return buf[:n], nil
}

// Reopen opens the file behind f (typically an O_PATH file) again through
// /proc/self/fd with the open flags (O_CLOEXEC is added) and names the new
// file name.
func Reopen(f *os.File, flags int, name string) (*os.File, error) {
	fd, err := unix.Open("/proc/self/fd/"+itoa(int(f.Fd())), flags|unix.O_CLOEXEC, 0)
	runtime.KeepAlive(f)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: name, Err: err}
	}
	return os.NewFile(uintptr(fd), name), nil
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var b [20]byte
	i := len(b)
	for n > 0 {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
	}
	return string(b[i:])
}
