package proc

import (
	"io"
	"path/filepath"
	"strconv"

	"nsprof/internal/unix"
)

// Self is the pid that names the calling process (/proc/self) in every
// function that takes a pid. Unlike os.Getpid it is resolved by the proc
// mount, so it stays correct when that mount belongs to another PID
// namespace.
const Self = 0

// FS reads a proc file system mounted at Root.
//
// The zero value reads /proc. Pointing Root at a directory tree lets tests
// use a fake /proc, and pointing it at /proc/PID/root/proc reads a
// container's view.
type FS struct {
	// Root is the mount point of the proc file system; "" means /proc.
	Root string
}

// DefaultFS reads /proc. The package-level ReadX functions use it.
var DefaultFS = FS{Root: "/proc"}

func (fs FS) root() string {
	if fs.Root == "" {
		return "/proc"
	}
	return fs.Root
}

// path joins Root with elems.
func (fs FS) path(elems ...string) string {
	return filepath.Join(append([]string{fs.root()}, elems...)...)
}

// pidPath returns the path of a file under /proc/PID, where pid is [Self] or
// a positive pid.
func (fs FS) pidPath(pid int, elems ...string) string {
	return fs.path(append([]string{pidDir(pid)}, elems...)...)
}

// taskPath returns the path of a file under /proc/PID/task/TID.
func (fs FS) taskPath(pid, tid int, elems ...string) string {
	return fs.pidPath(pid, append([]string{"task", strconv.Itoa(tid)}, elems...)...)
}

func pidDir(pid int) string {
	if pid == Self {
		return "self"
	}
	return strconv.Itoa(pid)
}

// parseFile opens path and runs parse on it, naming path in syntax errors.
// On error it returns the zero T. The file is opened outside the Go
// runtime's poller: os.Open tries to add each file to it, three fcntl and
// an epoll_ctl more per file read (a recording of many short-lived
// processes reads thousands).
func parseFile[T any](path string, parse func(io.Reader) (T, error)) (T, error) {
	var zero T
	f, err := unix.OpenUnpolled(path)
	if err != nil {
		return zero, err
	}
	defer f.Close()
	v, err := parse(f)
	if err != nil {
		return zero, withPath(err, path)
	}
	return v, nil
}
