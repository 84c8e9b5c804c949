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
