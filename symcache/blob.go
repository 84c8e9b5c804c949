package symcache

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash/crc32"
	"path/filepath"
	"strconv"
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

// decodeBlob returns the bytes of an encoded blob, checked: its header
// must be the one encodeBlob writes for them.
func decodeBlob(b []byte) ([]byte, error) {
	line, data, ok := bytes.Cut(b, []byte{'\n'})
	if !ok || !bytes.HasPrefix(line, []byte(blobMagic)) {
		return nil, fmt.Errorf("%w: not a blob", ErrCorrupt)
	}
	if want := blobHeader(data); string(line)+"\n" != want {
		return nil, fmt.Errorf("%w: blob of %d bytes with header %.80q, want %.80q", ErrCorrupt, len(data), line, want)
	}
	return data, nil
}

// blobHeader returns the header line of a blob of data.
func blobHeader(data []byte) string {
	return blobMagic + strconv.Itoa(len(data)) + " " + strconv.FormatUint(uint64(crc32.Checksum(data, castagnoli())), 16) + "\n"
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
