package unix

import (
	"io/fs"
	"syscall"
)

// StatOwner returns the owner's user ID of a file from its FileInfo (as
// os.Stat and os.File.Stat give it); false when the information holds none.
func StatOwner(st fs.FileInfo) (uint32, bool) {
	if s, ok := st.Sys().(*syscall.Stat_t); ok {
		return s.Uid, true
	}
	return 0, false
}

// IsNullDevice reports whether st (from os.Stat or os.Lstat) is Linux's
// null device, character device 1:3, whatever its name.
func IsNullDevice(st fs.FileInfo) bool {
	if st.Mode()&fs.ModeCharDevice == 0 {
		return false
	}
	s, ok := st.Sys().(*syscall.Stat_t)
	// dev_t as the kernel encodes it for user space: the minor's low 8
	// bits, the major's 12 above them (1:3 is 0x103).
	return ok && uint64(s.Rdev) == 1<<8|3
}
