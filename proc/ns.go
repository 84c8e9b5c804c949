package proc

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"nsprof/internal/unix"
)

// ParseNamespaceLink parses the target of a /proc/PID/ns/* link, such as
// "mnt:[4026531840]", into the namespace type and its inode number. On error
// it returns zero values and a *[SyntaxError].
func ParseNamespaceLink(link string) (kind string, inode uint64, err error) {
	k, rest, ok := strings.Cut(link, ":[")
	num, ok2 := strings.CutSuffix(rest, "]")
	if !ok || !ok2 || k == "" {
		return "", 0, syntaxError("ns", 0, link, "want type:[inode]")
	}
	n, err := strconv.ParseUint(num, 10, 64)
	if err != nil {
		return "", 0, syntaxError("ns", 0, link, "bad inode")
	}
	return k, n, nil
}

// NamespaceID returns the inode number that identifies the namespace of
// type ns ("mnt", "pid", "user", "net", "cgroup", "ipc", "uts", "time",
// "pid_for_children", "time_for_children") that pid belongs to. Two
// processes share a namespace exactly when the numbers are equal.
func (fs FS) NamespaceID(pid int, ns string) (uint64, error) {
	if ns == "" || strings.ContainsAny(ns, "/\x00") || ns == "." || ns == ".." {
		return 0, fmt.Errorf("namespace id of pid %d: invalid namespace type %q", pid, ns)
	}
	path := fs.pidPath(pid, "ns", ns)
	link, err := os.Readlink(path)
	if err != nil {
		return 0, err
	}
	kind, ino, err := ParseNamespaceLink(link)
	if err != nil {
		return 0, withPath(err, path)
	}
	if want, _ := strings.CutSuffix(ns, "_for_children"); kind != want {
		return 0, syntaxError(path, 0, link, "namespace type is %q, want %q", kind, want)
	}
	return ino, nil
}

// NamespaceID returns the namespace inode of pid through [DefaultFS].
func NamespaceID(pid int, ns string) (uint64, error) { return DefaultFS.NamespaceID(pid, ns) }

// Link describes one of the magic links /proc/PID/exe, /proc/PID/root or
// /proc/PID/cwd: the path it shows and the identity of the file it leads
// to. The path is in the target's mount namespace; the device and inode
// identify the file even when that path does not resolve on the host.
type Link struct {
	// Target is the link text, without the " (deleted)" suffix.
	Target string
	// Deleted reports that the kernel marked the target " (deleted)".
	Deleted bool
	// Dev and Inode come from stat through the link, which works for
	// deleted files and across mount namespaces.
	Dev   Dev
	Inode uint64
}

// ReadLink reads the magic link /proc/PID/name ("exe", "root" or "cwd")
// and stats the file it leads to. The readlink and the stat are two steps,
// so a process that execs in between yields a mix. Kernel threads have no
// exe and fail with an error matching [io/fs.ErrNotExist]; reading another
// user's links needs ptrace access and fails with EACCES.
func (fs FS) ReadLink(pid int, name string) (Link, error) {
	switch name {
	case "exe", "root", "cwd":
	default:
		return Link{}, fmt.Errorf("link of pid %d: unsupported link %q", pid, name)
	}
	path := fs.pidPath(pid, name)
	target, err := os.Readlink(path)
	if err != nil {
		return Link{}, err
	}
	maj, min, ino, err := unix.StatDevIno(path)
	if err != nil {
		return Link{}, err
	}
	l := Link{Target: target, Dev: Dev{Major: maj, Minor: min}, Inode: ino}
	if t, ok := strings.CutSuffix(target, deletedSuffix); ok {
		l.Target, l.Deleted = t, true
	}
	return l, nil
}

// ExeLink reads /proc/PID/exe through [DefaultFS].
func ExeLink(pid int) (Link, error) { return DefaultFS.ReadLink(pid, "exe") }

// RootLink reads /proc/PID/root through [DefaultFS]. Its Target is "/" for
// processes in a container that used pivot_root and the host directory for
// chroots; Dev and Inode identify the root directory either way.
func RootLink(pid int) (Link, error) { return DefaultFS.ReadLink(pid, "root") }
