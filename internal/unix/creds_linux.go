//go:build linux

package unix

import (
	"fmt"
	"runtime"
	"slices"

	"golang.org/x/sys/unix"
)

// Creds are the file-system credentials a file access is checked against:
// the fsuid, the fsgid and the supplementary groups of a process, as the
// host (the initial user namespace) numbers them.
type Creds struct {
	UID    uint32
	GID    uint32
	Groups []uint32
}

// String formats c as "uid U gid G groups [...]", for errors.
func (c Creds) String() string {
	return fmt.Sprintf("uid %d gid %d groups %v", c.UID, c.GID, c.Groups)
}

// WithCreds runs fn on an OS thread of its own whose fsuid, fsgid and
// supplementary groups are c's, so every open fn makes is checked by the
// kernel as it would be for a process with those credentials: a root
// caller loses CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH for the duration,
// which the kernel drops when the fsuid leaves 0. The credentials are
// per-thread (setfsuid, setfsgid and the raw setgroups system call); no
// other goroutine runs on the thread meanwhile. The thread gets its
// credentials back before it is released; when that fails it is never
// released, and the runtime ends it with its goroutine.
//
// A caller that is not root (geteuid != 0) cannot take other credentials;
// it already has no more rights than its own, so fn runs unchanged. fn
// must not start goroutines that open files: they would not run on the
// thread.
func WithCreds(c Creds, fn func() error) error {
	if unix.Geteuid() != 0 {
		return fn()
	}
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		restored := false
		defer func() {
			if restored {
				runtime.UnlockOSThread()
			}
		}()
		if err := takeCreds(c); err != nil {
			done <- err
			return
		}
		var err error
		func() {
			defer func() { restored = restoreCreds() == nil }()
			err = fn()
		}()
		done <- err
	}()
	return <-done
}

// takeCreds sets the calling thread's groups, fsgid and fsuid to c's, in
// that order: changing the fsuid first would drop the CAP_SETGID the other
// two need. It checks each took effect, since setfsuid and setfsgid report
// no error.
func takeCreds(c Creds) error {
	groups := make([]int, len(c.Groups))
	for i, g := range c.Groups {
		groups[i] = int(g)
	}
	if err := unix.Setgroups(groups); err != nil {
		return fmt.Errorf("take credentials %v: setgroups: %w", c, err)
	}
	unix.SetfsgidRetGid(int(c.GID))
	if g, _ := unix.SetfsgidRetGid(-1); g != int(c.GID) {
		return fmt.Errorf("take credentials %v: fsgid is %d", c, g)
	}
	unix.SetfsuidRetUid(int(c.UID))
	if u, _ := unix.SetfsuidRetUid(-1); u != int(c.UID) {
		return fmt.Errorf("take credentials %v: fsuid is %d", c, u)
	}
	return nil
}

// restoreCreds gives the calling thread the credentials it had: fsuid
// first (which restores the capabilities setgroups needs), then fsgid and
// the groups read at start-up.
func restoreCreds() error {
	unix.SetfsuidRetUid(unix.Geteuid())
	if u, _ := unix.SetfsuidRetUid(-1); u != unix.Geteuid() {
		return fmt.Errorf("restore fsuid: is %d", u)
	}
	unix.SetfsgidRetGid(unix.Getegid())
	if g, _ := unix.SetfsgidRetGid(-1); g != unix.Getegid() {
		return fmt.Errorf("restore fsgid: is %d", g)
	}
	if err := unix.Setgroups(processGroups); err != nil {
		return fmt.Errorf("restore groups: %w", err)
	}
	if g, err := unix.Getgroups(); err != nil || !slices.Equal(g, processGroups) {
		return fmt.Errorf("restore groups: %v, %v", g, err)
	}
	return nil
}

// processGroups are the supplementary groups of nsprof's threads, read
// at start-up, before any thread could have taken others.
var processGroups = func() []int {
	g, _ := unix.Getgroups()
	if g == nil {
		g = []int{}
	}
	return g
}()
