package symcache

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"

	"nsprof/internal/unix"
)

// Files of the cache directory that are not entries (Trim leaves them).
const (
	// FillLockName is the lock a process filling the cache's entries in
	// the background holds (LockFill): one at a time.
	FillLockName = "fill.lock"
	// FillLogName is where such a process logs (OpenFillLog).
	FillLogName = "fill.log"
)

// maxFillLog bounds the fill log: larger, it is emptied when opened.
const maxFillLog = 256 << 10

// LockFill takes the cache's fill lock (the file FillLockName, made when
// absent) without waiting, and returns the function that releases it;
// ok is false when another process holds it. The file is opened as
// entries are: not through a symbolic link, and only a regular file of
// the user's.
func (c *Cache) LockFill() (unlock func(), ok bool, err error) {
	f, err := c.openOwn(FillLockName, os.O_RDWR|os.O_CREATE)
	if err != nil {
		return nil, false, err
	}
	ok, err = unix.TryLock(f)
	if !ok || err != nil {
		f.Close()
		if err != nil {
			err = fmt.Errorf("symbol cache %s: %w", filepath.Join(c.dir, FillLockName), err)
		}
		return nil, false, err
	}
	return func() { f.Close() }, true, nil
}

// OpenFillLog opens the cache's fill log (the file FillLogName, made when
// absent) for appending, emptied first when it has grown over 256 KiB;
// opened as LockFill opens its file.
func (c *Cache) OpenFillLog() (*os.File, error) {
	f, err := c.openOwn(FillLogName, os.O_WRONLY|os.O_CREATE|os.O_APPEND)
	if err != nil {
		return nil, err
	}
	if st, err := f.Stat(); err == nil && st.Size() > maxFillLog {
		f.Truncate(0)
	}
	return f, nil
}

// openOwn opens name in the directory with flags (mode 0600 when made),
// not through a symbolic link, and checks that it is a regular file of
// the user's.
func (c *Cache) openOwn(name string, flags int) (*os.File, error) {
	f, err := c.root.OpenFile(name, flags|unix.O_NOFOLLOW|unix.O_NONBLOCK, 0o600)
	if err != nil {
		return nil, fmt.Errorf("symbol cache: %w", err)
	}
	if _, err := c.check(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("symbol cache %s: %w", filepath.Join(c.dir, name), err)
	}
	return f, nil
}

// Addrs returns, sorted, the link-time addresses whose frames e holds
// outside its runs (see Frames).
func (e *Entry) Addrs() []uint64 {
	return slices.Sorted(maps.Keys(e.allFrames()))
}
