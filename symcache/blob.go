package symcache

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash/crc32"
	"path/filepath"
	"strconv"

	"nsprof/internal/unix"
)

// A blob is a file kept in the cache that is not an object's entry (the
// kernel's symbol table of this boot): bytes under a key made by BlobKey,
// counted in the cache's size bound and removed by Trim as entries are.
// It is written and read as entries are (a new file renamed into place,
// mode 0600; opened without following links, the user's own regular file
// only), and holds a checksum of its bytes.

// BlobKey returns the key of the blob named by parts (its kind first,
// then what identifies its contents): a hash, shaped like an entry's key
// so that Trim bounds blobs too, and never an object's build-id.
func BlobKey(parts ...string) string {
	h := sha256.New()
	h.Write([]byte("nsprof blob"))
	for _, p := range parts {
		h.Write([]byte{0})
		h.Write([]byte(p))
	}
	return hex.EncodeToString(h.Sum(nil))
}

// blobMagic starts a blob's header line: "nsprof-blob 2 LEN CRC32C\n"
// (Castagnoli, as entries: a 5 MB blob's SHA-256 was a third of reading
// it back).
const blobMagic = "nsprof-blob 2 "

// GetBlob returns the bytes of the blob of key, nil when there is none. A
// blob that cannot be used (not the user's regular file, too large, its
// checksum wrong) is counted in Stats.Corrupt and returned as an error
// wrapping ErrCorrupt. GetBlob marks the blob used, for Trim.
func (c *Cache) GetBlob(key string) ([]byte, error) {
	b, err := c.readFile(key)
	if b == nil || err != nil {
		return nil, err
	}
	data, err := decodeBlob(b)
	if err != nil {
		c.corrupt.Add(1)
		return nil, fmt.Errorf("%s: %w", filepath.Join(c.dir, key), err)
	}
	c.used(key)
	return data, nil
}

// Mapped is a blob mapped from its file (see [Cache.MapBlob]).
type Mapped struct {
	file, data []byte
}

// Bytes returns the blob's bytes, valid until Close.
func (m *Mapped) Bytes() []byte { return m.data }

// Evict lets the blob's pages go from the process's resident set: they
// are read again from the page cache when touched.
func (m *Mapped) Evict() { unix.DropPages(m.file) }

// Close unmaps the blob: its bytes must not be used after.
func (m *Mapped) Close() error {
	if m.file == nil {
		return nil
	}
	err := unix.Munmap(m.file)
	m.file, m.data = nil, nil
	return err
}

// MapBlob is GetBlob with the blob's file mapped read-only rather than
// read into memory: its pages are the page cache's, in the process's
// resident set only once touched and until evicted, for a large blob read
// in small parts (this boot's kallsyms, of which a recording names a few
// hundred lines: read whole, 6.8 MB of a warm system-wide recording's
// 13.7 MB of live heap). The blob is checked as GetBlob checks it, then
// evicted. Entries are replaced by renaming a new file over them, so the
// file mapped stays as checked. nil when key has no blob.
func (c *Cache) MapBlob(key string) (*Mapped, error) {
	b, _, err := c.mapFile(key, false)
	if b == nil || err != nil {
		return nil, err
	}
	// Checked a part at a time, each let go once read: all at once, the
	// blob was resident for a moment (6.8 MB of kallsyms, more than a
	// busy system-wide recording's heap grew).
	data, err := decodeBlobDropping(b, mapCheckChunk, dropPages)
	if err != nil {
		unix.Munmap(b)
		c.corrupt.Add(1)
		return nil, fmt.Errorf("%s: %w", filepath.Join(c.dir, key), err)
	}
	m := &Mapped{file: b, data: data}
	m.Evict()
	c.used(key)
	return m, nil
}

// mapCheckChunk is the size of the parts of a mapped blob that MapBlob
// checks and lets go of one after the other; a multiple of the page size.
const mapCheckChunk = 256 << 10

// decodeBlob returns the bytes of an encoded blob, checked: its header
// must be the one encodeBlob writes for them.
func decodeBlob(b []byte) ([]byte, error) { return decodeBlobDropping(b, 0, nil) }

// decodeBlobDropping is decodeBlob calling drop with each part of b of
// chunk bytes (counted from b's start) once its checksum is taken, when
// chunk is not 0.
func decodeBlobDropping(b []byte, chunk int, drop func([]byte)) ([]byte, error) {
	line, data, ok := bytes.Cut(b, []byte{'\n'})
	if !ok || !bytes.HasPrefix(line, []byte(blobMagic)) {
		return nil, fmt.Errorf("%w: not a blob", ErrCorrupt)
	}
	var sum uint32
	if chunk <= 0 {
		sum = crc32.Checksum(data, castagnoli())
	} else {
		start := len(line) + 1 // where data is in b
		for lo := 0; lo < len(b); lo += chunk {
			hi := min(lo+chunk, len(b))
			if hi > start {
				sum = crc32.Update(sum, castagnoli(), b[max(lo, start):hi])
			}
			drop(b[lo:hi])
		}
	}
	if want := blobHeaderSum(data, sum); string(line)+"\n" != want {
		return nil, fmt.Errorf("%w: blob of %d bytes with header %.80q, want %.80q", ErrCorrupt, len(data), line, want)
	}
	return data, nil
}

// blobHeader returns the header line of a blob of data.
func blobHeader(data []byte) string {
	return blobHeaderSum(data, crc32.Checksum(data, castagnoli()))
}

// blobHeaderSum returns the header line of a blob of data whose checksum
// is sum.
func blobHeaderSum(data []byte, sum uint32) string {
	return blobMagic + strconv.Itoa(len(data)) + " " + strconv.FormatUint(uint64(sum), 16) + "\n"
}

// encodeBlob returns data with its header.
func encodeBlob(data []byte) []byte {
	return append([]byte(blobHeader(data)), data...)
}

// PutBlob writes data as the blob of key, replacing any, as Put writes an
// entry. A blob larger than MaxEntrySize is not written.
func (c *Cache) PutBlob(key string, data []byte) error { return c.written1(c.putBlob(key, data)) }

func (c *Cache) putBlob(key string, data []byte) error {
	if !validKey(key) {
		return fmt.Errorf("invalid key %q", key)
	}
	b := encodeBlob(data)
	if len(b) > MaxEntrySize {
		return fmt.Errorf("blob %s of %d bytes is larger than %d", key, len(b), MaxEntrySize)
	}
	return c.writeFile(key, b)
}
