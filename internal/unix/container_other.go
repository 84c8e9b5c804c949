//go:build !linux

package unix

import (
	"os"
	"syscall"
)

// Linux values of the flags package container uses.
const (
	O_RDONLY    = 0x0
	O_PATH      = 0x200000
	O_DIRECTORY = 0x10000
	O_NOFOLLOW  = 0x20000
	O_CLOEXEC   = 0x80000
	O_NONBLOCK  = 0x800

	RESOLVE_IN_ROOT       = 0x10
	RESOLVE_NO_MAGICLINKS = 0x2
	RESOLVE_NO_XDEV       = 0x1
	RESOLVE_NO_SYMLINKS   = 0x4
	RESOLVE_BENEATH       = 0x8

	S_IFMT  = 0xf000
	S_IFCHR = 0x2000
	S_IFDIR = 0x4000
	S_IFREG = 0x8000

	ENODATA = syscall.Errno(61)
	EXDEV   = syscall.EXDEV
	ELOOP   = syscall.ELOOP
	ENOTDIR = syscall.ENOTDIR
)

// FileID mirrors the Linux fstat fields package container uses.
type FileID struct {
	Dev  uint64
	Ino  uint64
	Mode uint32
	Rdev uint64
	Uid  uint32
}

// Mkdev returns the Linux dev_t of a major and minor device number.
func Mkdev(major, minor uint32) uint64 {
	return uint64(major&0xfff)<<8 | uint64(major&^0xfff)<<32 | uint64(minor&0xff) | uint64(minor&^0xff)<<12
}

// Major returns the major number of a Linux dev_t.
func Major(dev uint64) uint32 { return uint32((dev>>8)&0xfff | (dev>>32)&^0xfff) }

// Minor returns the minor number of a Linux dev_t.
func Minor(dev uint64) uint32 { return uint32(dev&0xff | (dev>>12)&^0xff) }

// OpenPathDir returns an error wrapping [ErrNotSupportedOnOS].
func OpenPathDir(path string) (*os.File, error) { return nil, errNonLinux("open O_PATH " + path) }

// Openat2 returns an error wrapping [ErrNotSupportedOnOS].
func Openat2(dir *os.File, path string, flags int, resolve uint64, name string) (*os.File, error) {
	return nil, errNonLinux("openat2 " + name)
}

// Fstat returns an error wrapping [ErrNotSupportedOnOS].
func Fstat(f *os.File) (FileID, error) { return FileID{}, errNonLinux("fstat") }

// Fgetxattr returns an error wrapping [ErrNotSupportedOnOS].
func Fgetxattr(f *os.File, name string) ([]byte, error) { return nil, errNonLinux("fgetxattr") }

// Reopen returns an error wrapping [ErrNotSupportedOnOS].
func Reopen(f *os.File, flags int, name string) (*os.File, error) {
	return nil, errNonLinux("reopen " + name)
}
