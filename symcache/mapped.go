package symcache

import (
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"

	"nsprof/internal/unix"
)

// An entry Get returns is decoded from its file mapped read-only, not
// read into the heap: its frames are decoded as lookups reach them (see
// lazyframes.go), so the file's bytes were held for as long as the entry
// was: the Go compiler's (3 MB, 108 k addresses, over a compile loop)
// was a fifth of the heap a system-wide recording's bundle peaked at.
// Mapped, the file's pages are the page cache's, resident in the process
// only once touched and until let go: its checksums are taken a part at
// a time, each let go once read (as MapBlob checks a blob), the pages
// touched by decoding are let go once it is done, and those lookups
// touch every evictLookups lookups. Entries are replaced by renaming a new file over
// them and only ever grow by deltas appended past what was mapped, so
// the bytes mapped stay those checked.

// evictLookups is how many lookups of a mapped entry's frames touch its
// pages before they are let go again.
const evictLookups = 1024

// entryFile is the file a mapped entry was decoded from.
type entryFile struct {
	b []byte
	// lookups counts the lookups since the pages were last let go.
	lookups int
}

// evict lets the file's pages go from the process's resident set.
func (f *entryFile) evict() {
	f.lookups = 0
	unix.DropPages(f.b)
}

// looked counts a lookup, letting the pages go every evictLookups.
func (f *entryFile) looked() {
	if f.lookups++; f.lookups >= evictLookups {
		f.evict()
	}
}

// Close unmaps the file of an entry Get returned. What of it was not
// decoded (the frames of addresses not looked up, runs, deltas) goes
// with it: after Close the entry holds its Symbols, Source, NoLines,
// LoadedAt and the Frames added to it, and FramesAt knows only those.
// Close does nothing to an entry made otherwise, nor a second time.
func (e *Entry) Close() error {
	if e.mapped == nil {
		return nil
	}
	e.lazyFrames, e.deltas, e.lazy = nil, nil, nil
	e.runs, e.lists, e.Covered = nil, nil, nil
	return e.unmap()
}

// unmap unmaps e's file, when mapped, of which nothing must be used
// after.
func (e *Entry) unmap() error {
	f := e.mapped
	if f == nil {
		return nil
	}
	e.mapped = nil
	return unix.Munmap(f.b)
}

// checksum is the CRC-32C of b[lo:hi], b being the whole file (or the
// bytes) an entry is decoded from. When drop is set, b is mapped: each
// part of b of mapCheckChunk bytes (counted from b's start, so
// page-aligned) is handed to drop once read.
func checksum(b []byte, lo, hi int, drop func([]byte)) uint32 {
	if drop == nil {
		return crc32.Checksum(b[lo:hi], castagnoli())
	}
	var sum uint32
	for c := lo / mapCheckChunk * mapCheckChunk; c < hi; c += mapCheckChunk {
		end := min(c+mapCheckChunk, len(b))
		sum = crc32.Update(sum, castagnoli(), b[max(c, lo):min(end, hi)])
		drop(b[c:end])
	}
	return sum
}

// dropPages is the drop of mapped files' checksums.
func dropPages(b []byte) { unix.DropPages(b) }

// mapFile maps the file of key read-only, checked as readFile checks it
// (counted and returned as it counts and returns); nil when there is
// none. When the file cannot be mapped, it is read into b instead
// (mapped false) if read is set, else the error is returned.
func (c *Cache) mapFile(key string, read bool) (b []byte, mapped bool, err error) {
	f, err := c.openFile(key)
	if f == nil || err != nil {
		return nil, false, err
	}
	defer f.Close()
	corrupt := func(err error) ([]byte, bool, error) {
		c.corrupt.Add(1)
		return nil, false, fmt.Errorf("%s: %w", filepath.Join(c.dir, key), err)
	}
	st, err := c.check(f)
	if err != nil {
		return corrupt(err)
	}
	if st.Size() == 0 {
		return corrupt(fmt.Errorf("%w: empty", ErrCorrupt))
	}
	b, err = unix.Mmap(int(f.Fd()), int(st.Size()), unix.PROT_READ, unix.MAP_SHARED)
	if err == nil {
		return b, true, nil
	}
	if !read {
		return nil, false, fmt.Errorf("%s: %w", filepath.Join(c.dir, key), err)
	}
	if b, err = c.readAll(f, st); err != nil {
		return corrupt(err)
	}
	return b, false, nil
}

// readAll reads f, of what stat said st, whole.
func (c *Cache) readAll(f *os.File, st os.FileInfo) ([]byte, error) {
	// Read into a slice of the file's size: grown from 512 bytes as
	// io.ReadAll grows it, a 5 MB blob left twice that in copies.
	b := make([]byte, st.Size())
	if _, err := f.ReadAt(b, 0); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	return b, nil
}
