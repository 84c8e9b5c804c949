package container

import (
	"errors"
	"io/fs"
	"os"
	"sync"
)

// OnHost reports whether a process whose mount namespace id is mntNS,
// whose root directory (the /proc/PID/root link) reads root and whose
// cgroups are at cgroupPaths is one [Identify] calls [KindHost], without
// opening it: in this process's own mount namespace and root, in no
// libpod cgroup, with no /.flatpak-info in that root. False when that
// cannot be told from them; the caller then opens the process. A
// system-wide recording sees hundreds of processes start a second, and
// opening each read a dozen /proc files.
func OnHost(mntNS uint64, root string, cgroupPaths []string) bool {
	if mntNS == 0 || mntNS != selfMntNS() || root != "/" || ownFlatpakInfo() {
		return false
	}
	for _, p := range cgroupPaths {
		if _, ok := libpodIDFromCgroup(p); ok {
			return false
		}
	}
	return true
}

// ownFlatpakInfo reports whether this process's root may hold a
// /.flatpak-info (it does, or it could not be told).
var ownFlatpakInfo = sync.OnceValue(func() bool {
	_, err := os.Lstat("/.flatpak-info")
	return !errors.Is(err, fs.ErrNotExist)
})
