package container

import (
	"errors"
	"fmt"
	"os"

	"nsprof/internal/unix"
	"nsprof/proc"
)

// Files reached through a process (its root, its /tmp, its debug links,
// its container's storage and metadata) are opened with that process's
// file-system credentials, never with nsprof's own: the process's owner
// controls its mount namespace and can bind-mount or link any path there
// to a file only root may read. The kernel then checks each open as it
// would for the process itself. Files the process maps are first read
// through /proc/PID/map_files, which the kernel already guards with a
// ptrace access check; that route keeps nsprof's credentials.

// procCreds returns the file-system credentials of a /proc/PID/status.
func procCreds(st proc.Status) unix.Creds {
	return unix.Creds{UID: st.Uid.FS, GID: st.Gid.FS, Groups: st.Groups}
}

// openCreds records the process's credentials at Open, from the status
// the snapshot read, and its start time.
func (p *Process) openCreds(st proc.Status, err error) {
	if err != nil {
		p.credsErr = fmt.Errorf("credentials of pid %d: %w", p.pid, err)
		return
	}
	stat, err := proc.ReadStat(p.pid)
	if err != nil {
		p.credsErr = fmt.Errorf("credentials of pid %d: %w", p.pid, err)
		return
	}
	p.creds, p.startTime = procCreds(st), stat.StartTime
}

// Creds returns the credentials files reached through the process are
// opened with: the process's fsuid, fsgid and supplementary groups as they
// are now while the process that was opened still runs (a daemon that
// dropped root after it was opened is held to its new rights), else as
// they were at [Open]. It fails when they were never known: such a process
// is not looked into.
func (p *Process) Creds() (unix.Creds, error) {
	if p.credsErr != nil {
		return unix.Creds{}, p.credsErr
	}
	p.credsReads.Add(1)
	st, err := proc.ReadStatus(p.pid)
	if err != nil {
		return p.creds, nil
	}
	// Read after the status: the same start time means the status was
	// the same process's, not a later one's that reused the pid.
	if stat, err := proc.ReadStat(p.pid); err != nil || stat.StartTime != p.startTime {
		return p.creds, nil
	}
	return procCreds(st), nil
}

// asProcess runs open with the process's credentials.
func (p *Process) asProcess(open func() (*os.File, string, error)) (f *os.File, via string, err error) {
	return asCredsOf(p.Creds, open)
}

// credsOnce returns a function giving p's credentials ([Process.Creds]),
// read at its first call and the same at every later one. The routes of
// one open try up to four places, each with the process's credentials,
// within microseconds of each other; reading the credentials is two /proc
// files, and a debug file looked for under its six names through every
// route read 48 of them.
func (p *Process) credsOnce() func() (unix.Creds, error) {
	var (
		c    unix.Creds
		err  error
		read bool
	)
	return func() (unix.Creds, error) {
		if !read {
			c, err = p.Creds()
			read = true
		}
		return c, err
	}
}

// asCredsOf runs open with the credentials creds gives.
func asCredsOf(creds func() (unix.Creds, error), open func() (*os.File, string, error)) (f *os.File, via string, err error) {
	c, err := creds()
	if err != nil {
		return nil, "", err
	}
	err = asCreds(c, func() error {
		f, via, err = open()
		return err
	})
	return f, via, err
}

// asCreds runs fn with the credentials c. Credentials of root (fsuid 0)
// are nsprof's own, and fn runs directly.
func asCreds(c unix.Creds, fn func() error) error {
	if c.UID == 0 {
		return fn()
	}
	return unix.WithCreds(c, fn)
}

// ErrNotOwned is returned by [Process.OpenOwnedFile] and
// [Process.OpenOwnedMapped] for a file that neither the process's user nor
// root owns.
var ErrNotOwned = errors.New("owned by neither the process's user nor root")

// OpenOwnedFile opens name as [Process.OpenFile] does, and refuses a file
// that neither the process's fsuid nor root owns, as perf refuses a JIT
// map that neither its user nor root owns: such a file was not written by
// the process for its profiler.
func (p *Process) OpenOwnedFile(name string) (*os.File, string, error) {
	f, via, err := p.OpenFile(name)
	if err != nil {
		return nil, "", err
	}
	if err := p.checkOwner(f, name); err != nil {
		f.Close()
		return nil, "", err
	}
	return f, via, nil
}

// OpenOwnedMapped opens the file of mapping m as [Process.OpenMapped]
// does, with the owner check of [Process.OpenOwnedFile]: for files a
// process maps for its profiler to read rather than to run, such as a
// JIT's jitdump.
func (p *Process) OpenOwnedMapped(m Mapping) (*os.File, string, error) {
	f, via, err := p.OpenMapped(m)
	if err != nil {
		return nil, "", err
	}
	if err := p.checkOwner(f, m.Path); err != nil {
		f.Close()
		return nil, "", err
	}
	return f, via, nil
}

// checkOwner returns an error naming name unless f is owned by root or by
// the process's fsuid.
func (p *Process) checkOwner(f *os.File, name string) error {
	c, err := p.Creds()
	if err != nil {
		return err
	}
	st, err := unix.Fstat(f)
	if err != nil {
		return err
	}
	if st.Uid != 0 && st.Uid != c.UID {
		return &os.PathError{Op: "open", Path: name, Err: fmt.Errorf("uid %d: %w (uid %d)", st.Uid, ErrNotOwned, c.UID)}
	}
	return nil
}

// AsProcess returns open made to run with the process's credentials (see
// [Process.Creds]): for files found from names the process controls, such
// as the debug file its .gnu_debuglink names, searched for on the host.
func (p *Process) AsProcess(open func(name string) (*os.File, error)) func(name string) (*os.File, error) {
	return func(name string) (*os.File, error) {
		f, _, err := p.asProcess(func() (*os.File, string, error) {
			f, err := open(name)
			return f, "", err
		})
		return f, err
	}
}
