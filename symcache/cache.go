package symcache

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"nsprof/internal/unix"
)

// DefaultMaxBytes bounds the directory when [Options.MaxBytes] is zero.
const DefaultMaxBytes = 512 << 20

// Options configures [Open]. The zero value bounds the cache to
// DefaultMaxBytes.
type Options struct {
	// MaxBytes bounds the total size of the entries; [Cache.Trim]
	// removes the least recently used beyond it. Zero: DefaultMaxBytes.
	MaxBytes int64
}

// Cache is an open cache directory. Its methods may be called
// concurrently.
type Cache struct {
	dir      string
	root     *os.Root
	maxBytes int64
	uid      uint32

	hits, misses, corrupt, written, failed atomic.Int64
}

// Stats counts what a Cache did since it was opened.
type Stats struct {
	// Hits and Misses count Get calls that found an entry or none.
	Hits, Misses int
	// Corrupt counts entries ignored: undecodable, not a regular file,
	// not the user's, or too large.
	Corrupt int
	// Written counts entries Put wrote; Failed those it could not.
	Written, Failed int
}

// DefaultDir returns where the cache is kept: /var/cache/nsprof/symbols
// for root, else $XDG_CACHE_HOME/nsprof/symbols (~/.cache/nsprof/symbols).
func DefaultDir() (string, error) {
	if os.Geteuid() == 0 {
		return "/var/cache/nsprof/symbols", nil
	}
	c, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("symbol cache: %w", err)
	}
	return filepath.Join(c, "nsprof", "symbols"), nil
}

// Open opens the cache directory dir, creating it (mode 0700, its parents
// 0755) when absent. It refuses a directory that is a symbolic link, not
// owned by the user, or writable by group or others, and one whose parent
// someone else could replace it in (writable by group or others without
// the sticky bit, or owned by another user than the user or root).
func Open(dir string, opts Options) (*Cache, error) {
	dir = filepath.Clean(dir)
	uid := uint32(os.Geteuid())
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return nil, fmt.Errorf("symbol cache: %w", err)
	}
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return nil, fmt.Errorf("symbol cache: %w", err)
	}
	if err := checkParent(filepath.Dir(dir), uid); err != nil {
		return nil, err
	}
	st, err := os.Lstat(dir)
	if err != nil {
		return nil, fmt.Errorf("symbol cache: %w", err)
	}
	if err := checkDir(dir, st, uid); err != nil {
		return nil, err
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("symbol cache: %w", err)
	}
	// The directory opened is the one checked, not one swapped in since.
	if st2, err := root.Stat("."); err != nil || !os.SameFile(st, st2) {
		root.Close()
		return nil, fmt.Errorf("symbol cache %s: replaced while it was opened", dir)
	}
	c := &Cache{dir: dir, root: root, maxBytes: opts.MaxBytes, uid: uid}
	if c.maxBytes <= 0 {
		c.maxBytes = DefaultMaxBytes
	}
	return c, nil
}

// checkDir refuses a cache directory st of path dir that is not a
// directory (a symbolic link included), not owned by uid, or writable by
// group or others.
func checkDir(dir string, st fs.FileInfo, uid uint32) error {
	if !st.IsDir() {
		return fmt.Errorf("symbol cache %s: not a directory (%s)", dir, st.Mode().Type())
	}
	if o := owner(st); o != uid {
		return fmt.Errorf("symbol cache %s: owned by uid %d, not by uid %d", dir, o, uid)
	}
	if st.Mode().Perm()&0o022 != 0 {
		return fmt.Errorf("symbol cache %s: writable by group or others (mode %v)", dir, st.Mode().Perm())
	}
	return nil
}

// checkParent refuses a parent directory in which another user could
// rename or replace the cache directory.
func checkParent(dir string, uid uint32) error {
	st, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("symbol cache: %w", err)
	}
	if o := owner(st); o != uid && o != 0 {
		return fmt.Errorf("symbol cache parent %s: owned by uid %d, not by uid %d or root", dir, o, uid)
	}
	if st.Mode().Perm()&0o022 != 0 && st.Mode()&fs.ModeSticky == 0 {
		return fmt.Errorf("symbol cache parent %s: writable by group or others (mode %v)", dir, st.Mode().Perm())
	}
	return nil
}

func owner(st fs.FileInfo) uint32 {
	if id, ok := unix.StatOwner(st); ok {
		return id
	}
	return ^uint32(0)
}

// Dir returns the cache's directory.
func (c *Cache) Dir() string { return c.dir }

// Close closes the directory.
func (c *Cache) Close() error { return c.root.Close() }

// Stats returns what c did since it was opened.
func (c *Cache) Stats() Stats {
	return Stats{
		Hits: int(c.hits.Load()), Misses: int(c.misses.Load()), Corrupt: int(c.corrupt.Load()),
		Written: int(c.written.Load()), Failed: int(c.failed.Load()),
	}
}

// validKey reports whether key is the name of an entry: a build-id in
// lowercase hex, 16 to 80 digits. (A regexp compiled at start-up was a
// tenth of the start-up of every nsprof command.)
func validKey(key string) bool {
	if len(key) < 16 || len(key) > 80 {
		return false
	}
	for i := range len(key) {
		if c := key[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// Key returns the cache key of an object from its GNU build-id, or, when
// it has none, its Go build-id; "" when it has neither: an object known
// only by path or inode is not cached, since another file may take its
// place.
func Key(gnuBuildID, goBuildID []byte) string {
	switch {
	case len(gnuBuildID) >= 8 && len(gnuBuildID) <= 40:
		return hex.EncodeToString(gnuBuildID)
	case len(goBuildID) > 0:
		h := sha256.Sum256(append([]byte("go:"), goBuildID...))
		return hex.EncodeToString(h[:])
	}
	return ""
}

// Get returns the entry of key, nil when there is none. An entry that
// cannot be used (corrupt, truncated, not a regular file of the user's,
// too large) is counted in Stats.Corrupt and returned as an error wrapping
// ErrCorrupt; the caller goes on without it. An entry whose own payload
// is sound but one of whose deltas (see AddFrames) is not is returned
// without that delta and those after it, with such an error too, and
// written again without them. Get marks the entry used, for Trim.
//
// The entry's file is mapped (see mapped.go) until its Close, which the
// caller calls once done with it.
func (c *Cache) Get(key string) (*Entry, error) {
	b, mapped, err := c.mapFile(key, true) // read where it cannot be mapped
	if b == nil || err != nil {
		return nil, err
	}
	var drop func([]byte)
	if mapped {
		drop = dropPages
	}
	e, err := decodeFile(key, b, drop)
	if mapped {
		if e == nil {
			unix.Munmap(b)
		} else {
			e.mapped = &entryFile{b: b}
			e.mapped.evict()
		}
	}
	if err != nil {
		c.corrupt.Add(1)
		err = fmt.Errorf("%s: %w", filepath.Join(c.dir, key), err)
		if e == nil {
			return nil, err
		}
		// A delta that cannot be used: the entry is written again
		// without it, for the deltas of later recordings to follow.
		c.put(key, e)
		c.used(key)
		return e, err
	}
	// A block of addresses, runs or lists found bad by a lookup (see
	// lazyFrames and lazyRanges) is an entry that cannot be used,
	// counted so, once.
	var once sync.Once
	bad := func() { once.Do(func() { c.corrupt.Add(1) }) }
	if e.lazy != nil {
		e.lazy.onBad = bad
	}
	if e.lazyFrames != nil {
		e.lazyFrames.onBad = bad
	}
	c.used(key)
	return e, nil
}

// readFile returns the bytes of the file key, nil when there is none
// (counted as a miss). A file that is not the user's regular file or is
// larger than MaxEntrySize is counted as corrupt and returned as an error
// wrapping ErrCorrupt.
func (c *Cache) readFile(key string) ([]byte, error) {
	f, err := c.openFile(key)
	if f == nil || err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := c.read(f)
	if err != nil {
		c.corrupt.Add(1)
		return nil, fmt.Errorf("%s: %w", filepath.Join(c.dir, key), err)
	}
	return b, nil
}

// openFile opens the file of key for readFile, nil when there is none
// (counted as a miss).
func (c *Cache) openFile(key string) (*os.File, error) {
	if !validKey(key) {
		return nil, fmt.Errorf("symbol cache: invalid key %q", key)
	}
	f, err := c.root.OpenFile(key, os.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK, 0)
	if errors.Is(err, fs.ErrNotExist) {
		c.misses.Add(1)
		return nil, nil
	}
	if err != nil {
		// A symbolic link planted under the name fails here (ELOOP).
		c.corrupt.Add(1)
		return nil, fmt.Errorf("%w %s: %v", ErrCorrupt, filepath.Join(c.dir, key), err)
	}
	return f, nil
}

// used counts a hit on key and marks it used, for Trim.
func (c *Cache) used(key string) {
	c.hits.Add(1)
	now := time.Now()
	c.root.Chtimes(key, now, now) // least recently used goes first; best effort
}

func (c *Cache) read(f *os.File) ([]byte, error) {
	st, err := c.check(f)
	if err != nil {
		return nil, err
	}
	return c.readAll(f, st)
}

// check returns what stat says of f, a file of the cache, or an error
// when it is not the user's regular file or is larger than MaxEntrySize.
func (c *Cache) check(f *os.File) (os.FileInfo, error) {
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%w: not a regular file (%s)", ErrCorrupt, st.Mode().Type())
	}
	if o := owner(st); o != c.uid {
		return nil, fmt.Errorf("%w: owned by uid %d, not by uid %d", ErrCorrupt, o, c.uid)
	}
	if st.Size() > MaxEntrySize {
		return nil, fmt.Errorf("%w: %d bytes, more than %d", ErrCorrupt, st.Size(), MaxEntrySize)
	}
	return st, nil
}

// Put writes the entry of key, replacing any: into a new file of the
// directory, renamed over the entry's name, so that readers see the old
// entry or the new one, never part of one. An entry larger than
// MaxEntrySize is not written.
func (c *Cache) Put(key string, e *Entry) error { return c.written1(c.put(key, e)) }

// written1 counts a file written, or one that err says was not, which it
// returns naming the cache.
func (c *Cache) written1(err error) error {
	if err != nil {
		c.failed.Add(1)
		return fmt.Errorf("symbol cache %s: %w", c.dir, err)
	}
	c.written.Add(1)
	return nil
}

// tmpPrefix starts the names of entries being written.
const tmpPrefix = ".tmp-"

func (c *Cache) put(key string, e *Entry) error {
	if !validKey(key) {
		return fmt.Errorf("invalid key %q", key)
	}
	b := encode(key, e)
	if len(b) > MaxEntrySize {
		return fmt.Errorf("entry %s of %d bytes is larger than %d", key, len(b), MaxEntrySize)
	}
	if err := c.writeFile(key, b); err != nil {
		return err
	}
	e.file = fileRef{payload: uint64(len(b) - headerSize), sum: binary.LittleEndian.Uint32(b[headerSize-4:])}
	return nil
}

// writeFile writes b as the file key: into a new file of the directory
// (mode 0600), renamed over the name.
func (c *Cache) writeFile(key string, b []byte) error {
	tmp := tmpPrefix + key + "-" + rand.Text()
	f, err := c.root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL|unix.O_NOFOLLOW, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = c.root.Rename(tmp, key)
	}
	if err != nil {
		c.root.Remove(tmp)
	}
	return err
}

// staleTemp is the age after which a temporary file is taken to be left
// by a recorder that died.
const staleTemp = time.Hour

// Trim removes the entries least recently used (by modification time)
// until the entries take at most the size bound, and temporary files
// older than an hour. Files of other names are left alone. It returns how
// many entries it removed.
func (c *Cache) Trim() (int, error) {
	d, err := c.root.Open(".")
	if err != nil {
		return 0, fmt.Errorf("symbol cache %s: %w", c.dir, err)
	}
	ents, err := d.ReadDir(-1)
	d.Close()
	if err != nil {
		return 0, fmt.Errorf("symbol cache %s: %w", c.dir, err)
	}
	type file struct {
		name string
		size int64
		mod  time.Time
	}
	var files []file
	var total int64
	for _, de := range ents {
		if !de.Type().IsRegular() {
			continue
		}
		st, err := de.Info()
		if err != nil {
			continue
		}
		name := de.Name()
		if strings.HasPrefix(name, tmpPrefix) {
			if time.Since(st.ModTime()) > staleTemp {
				c.root.Remove(name)
			}
			continue
		}
		if !validKey(name) {
			continue
		}
		files = append(files, file{name, st.Size(), st.ModTime()})
		total += st.Size()
	}
	slices.SortFunc(files, func(a, b file) int { return a.mod.Compare(b.mod) })
	removed := 0
	for _, f := range files {
		if total <= c.maxBytes {
			break
		}
		if err := c.root.Remove(f.name); err != nil {
			return removed, fmt.Errorf("symbol cache %s: %w", c.dir, err)
		}
		total -= f.size
		removed++
	}
	return removed, nil
}
