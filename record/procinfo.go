package record

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"nsprof/capture"
	"nsprof/container"
	"nsprof/internal/unix"
	"nsprof/proc"
)

// procInfo is a process's line of the capture's [capture.ProcessFile],
// with what the recorder needs to know of how it was read.
type procInfo struct {
	capture.ProcessInfo
	// uidKnown says UID was read: the redaction policy treats a process
	// whose owner is unknown as another user's.
	uidKnown bool
	// rootDev and rootInode identify the root directory (Root is its
	// path).
	rootDev   string
	rootInode uint64
	// gone says the process was no longer in /proc when inspected.
	gone bool
	// kthread says it is a kernel thread (status's Kthread: 1): it has
	// no command line, executable, mappings or cgroups of its own to
	// read.
	kthread bool
}

// mountKey returns the key of pi's mountinfo in mountTables.
func (pi *procInfo) mountKey() mountKey {
	return mountKey{ns: pi.MntNS, root: pi.Root, dev: pi.rootDev, rootInode: pi.rootInode}
}

// inspect reads what is known about pid from /proc. It never fails: what
// cannot be read is named in Err.
func inspect(fs proc.FS, pid int, t int64) procInfo {
	pi := procInfo{ProcessInfo: capture.ProcessInfo{Kind: capture.KindProcess, Time: t, PID: pid}}
	st, err := fs.ReadStatus(pid)
	if err != nil {
		pi.Err = "status: " + err.Error()
		if procGone(err) {
			// Reaped: every other file of the pid is gone too. Over a
			// loop of Go compiles most forks are read after their
			// child exited (278 of 501 inspections), and asking for
			// the other seven files was as many failed lookups more.
			pi.gone = true
			return pi
		}
	} else {
		pi.PPID, pi.NSpid, pi.Comm, pi.UID, pi.uidKnown = st.PPid, st.NStgid, st.Name, st.Uid.Real, true
		pi.kthread = st.Kthread
	}
	pi.inspectRest(fs)
	return pi
}

// inspectRest reads what inspect reads after the status, adding what
// cannot be read to Err. A kernel thread's command line, executable and
// cgroups are not read: it has none of the first two, the root cgroups,
// and most of a machine's processes are kernel threads (61 of 68 here),
// whose files were most of a system-wide recording's start.
func (pi *procInfo) inspectRest(fs proc.FS) {
	pid := pi.PID
	errs := []string{}
	if pi.Err != "" {
		errs = append(errs, pi.Err)
	}
	note := func(what string, err error) {
		if err != nil {
			errs = append(errs, what+": "+err.Error())
		}
	}
	var err error
	if !pi.kthread {
		if pi.Cmdline, err = fs.ReadCmdline(pid); err != nil {
			note("cmdline", err)
		}
	}
	pi.MntNS, err = fs.NamespaceID(pid, "mnt")
	note("mnt ns", err)
	if procGone(err) && pi.kthread {
		pi.gone = true // exited since its status was read
	}
	pi.PidNS, err = fs.NamespaceID(pid, "pid")
	note("pid ns", err)
	pi.UserNS, _ = fs.NamespaceID(pid, "user")
	if l, err := fs.ReadLink(pid, "root"); err == nil {
		pi.Root, pi.rootDev, pi.rootInode = l.Target, l.Dev.String(), l.Inode
	}
	if !pi.kthread {
		if l, err := fs.ReadLink(pid, "exe"); err == nil {
			pi.Exe, pi.ExeDev, pi.ExeInode = l.Target, l.Dev.String(), l.Inode
		}
		if cg, err := fs.ReadCgroup(pid); err == nil {
			for _, c := range cg {
				pi.Cgroups = append(pi.Cgroups, fmt.Sprintf("%d:%s:%s", c.HierarchyID, strings.Join(c.Controllers, ","), c.Path))
			}
		}
	}
	pi.Err = strings.Join(errs, "; ")
}

// procGone reports whether err says the process is no longer in /proc.
func procGone(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, unix.ESRCH)
}

// onHost reports whether what inspect read says the process is on the
// host (see [container.OnHost]).
func onHost(pi *procInfo) bool {
	paths := make([]string, 0, len(pi.Cgroups))
	for _, c := range pi.Cgroups {
		// As inspect writes them: hierarchy:controllers:path.
		parts := strings.SplitN(c, ":", 3)
		if len(parts) != 3 {
			return false
		}
		paths = append(paths, parts[2])
	}
	return container.OnHost(pi.MntNS, pi.Root, paths)
}

// midExec reports whether the process was read (its status gave a name)
// without a command line: a user process in the middle of an exec, before
// its new arguments are set up (or a zombie; kernel threads too, which
// callers tell apart).
func (pi *procInfo) midExec() bool { return len(pi.Cmdline) == 0 && pi.Comm != "" }

// cmdline returns what a PROCESS frame carries: argv joined by spaces, or
// the comm for kernel threads and processes whose argv is gone.
func (pi *procInfo) cmdline() string {
	if len(pi.Cmdline) > 0 {
		return strings.Join(pi.Cmdline, " ")
	}
	return pi.Comm
}
