package proc

import (
	"os"
	"strconv"
)

// ReadFDLink returns what file descriptor fd of process pid refers to,
// as /proc/PID/fd/FD links to it: a path (as the process's mount
// namespace names it), or "pipe:[INODE]", "socket:[INODE]",
// "anon_inode:[eventfd]" and the like.
func (fs FS) ReadFDLink(pid, fd int) (string, error) {
	return os.Readlink(fs.pidPath(pid, "fd", strconv.Itoa(fd)))
}

// TaskExists reports whether thread tid of process pid is still there
// (has a /proc/PID/task/TID directory).
func (fs FS) TaskExists(pid, tid int) bool {
	_, err := os.Stat(fs.taskPath(pid, tid))
	return err == nil
}
