//go:build !linux

package unix

// StatDevIno returns an error wrapping [ErrNotSupportedOnOS].
func StatDevIno(path string) (major, minor uint32, ino uint64, err error) {
	return 0, 0, 0, errNonLinux("stat " + path)
}
