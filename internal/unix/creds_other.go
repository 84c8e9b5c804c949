//go:build !linux

package unix

import "fmt"

// Creds are the file-system credentials a file access is checked against.
type Creds struct {
	UID    uint32
	GID    uint32
	Groups []uint32
}

// String formats c as "uid U gid G groups [...]", for errors.
func (c Creds) String() string {
	return fmt.Sprintf("uid %d gid %d groups %v", c.UID, c.GID, c.Groups)
}

// WithCreds runs fn: other systems have no per-thread credentials, and
// nsprof records nothing there.
func WithCreds(c Creds, fn func() error) error { return fn() }
