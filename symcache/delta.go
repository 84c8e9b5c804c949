package symcache

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"os"
	"path/filepath"

	"nsprof/internal/unix"
	"nsprof/symbol"
)

// An entry of version 3 may be followed by deltas: the frames of
// addresses that later recordings resolved, appended to the file
// (Cache.AddFrames) rather than the whole entry written again. The Go
// compiler's entry grows by a few thousand addresses at every recording
// of a compile loop, and writing its megabytes each time was most of what
// the cache cost a warm recording. Each delta is
//
//	deltaMagic, payload length (u64), CRC-32C of the payload (u32), payload
//
// and its payload the CRC-32C of the entry's payload (the base it was
// appended to), a string table and addresses with their frames, as the
// entry's own. Deltas are merged into the entry as it is read; once they
// add up to more than the entry's payload, or number maxDeltas, the entry
// is written whole again with them.

// deltaMagic starts every delta; deltaHeaderSize is it, the payload
// length (u64) and the CRC-32C (u32).
const (
	deltaMagic      = "nsprofSD"
	deltaHeaderSize = len(deltaMagic) + 8 + 4
)

// maxDeltas is the most deltas a file gets before it is written whole.
const maxDeltas = 64

// fileRef is what an entry knows of the file it was read from or written
// as: its payload's length and CRC-32C (0 length: none, or one of a
// version without deltas), the deltas after it, and whether one could
// not be used.
type fileRef struct {
	payload    uint64
	sum        uint32
	deltas     int
	deltaBytes int
	bad        bool
}

// decodeDeltas gives e the frames of the deltas in file from byte off,
// after e's payload, of checksum e.file.sum, undecoded (see deltaAddrs);
// drop is decodeFile's. An address of an earlier delta keeps its
// frames. The first delta
// that cannot be used (truncated, a checksum mismatch, appended to
// another payload, a bad field) ends them: it is returned as an error
// wrapping ErrCorrupt, the deltas before it merged.
func decodeDeltas(e *Entry, file []byte, off int, drop func([]byte)) error {
	var deltas []*lazyFrames
	var err error
	for i := 0; off < len(file); i++ {
		var z *lazyFrames
		var size int
		if z, size, err = checkDelta(e.file.sum, file, off, i, drop); err != nil {
			break
		}
		deltas = append(deltas, z)
		e.file.deltas++
		e.file.deltaBytes += size
		off += size
	}
	e.deltas = indexDeltas(deltas)
	return err
}

// checkDelta checks delta i, at byte off of file, of an entry of payload
// checksum base, and returns its frames, undecoded, and its size; drop
// is decodeFile's.
func checkDelta(base uint32, file []byte, off, i int, drop func([]byte)) (*lazyFrames, int, error) {
	b := file[off:]
	fail := func(format string, args ...any) error {
		return fmt.Errorf("%w: delta %d at byte %d: %s", ErrCorrupt, i, off, fmt.Sprintf(format, args...))
	}
	if len(b) < deltaHeaderSize {
		return nil, 0, fail("truncated: %d bytes of its %d-byte header", len(b), deltaHeaderSize)
	}
	if string(b[:len(deltaMagic)]) != deltaMagic {
		return nil, 0, fail("no delta header")
	}
	n := binary.LittleEndian.Uint64(b[len(deltaMagic):])
	sum := binary.LittleEndian.Uint32(b[len(deltaMagic)+8:])
	if n > uint64(len(b)-deltaHeaderSize) {
		return nil, 0, fail("truncated: payload of %d bytes, header says %d", len(b)-deltaHeaderSize, n)
	}
	p := b[deltaHeaderSize : deltaHeaderSize+int(n)]
	if checksum(file, off+deltaHeaderSize, off+deltaHeaderSize+int(n), drop) != sum {
		return nil, 0, fail("checksum mismatch")
	}
	d := newDecoder(p, 0)
	if got := d.uvarint(); d.err == nil && got != uint64(base) {
		return nil, 0, fail("appended to another entry (of checksum %#x, not %#x)", got, base)
	}
	table := d.table()
	z := checkAddrFrames(&d, p, table, true)
	if d.err == nil && len(d.b) != 0 {
		d.fail("%d bytes after its last address", len(d.b))
	}
	if d.err != nil {
		return nil, 0, fmt.Errorf("delta %d at byte %d: %w", i, off, d.err)
	}
	return z, deltaHeaderSize + int(n), nil
}

// encodeDelta returns the delta adding frames to the entry of payload
// checksum base.
func encodeDelta(base uint32, frames map[uint64][]symbol.Frame) []byte {
	var strs stringTable
	body := strs.appendAddrFrames(nil, sortedOf(frames))
	p := binary.AppendUvarint(nil, uint64(base))
	p = strs.appendTable(p)
	p = append(p, body...)
	out := make([]byte, 0, deltaHeaderSize+len(p))
	out = append(out, deltaMagic...)
	out = binary.LittleEndian.AppendUint64(out, uint64(len(p)))
	out = binary.LittleEndian.AppendUint32(out, crc32.Checksum(p, castagnoli()))
	return append(out, p...)
}

// errStale says the file of an entry is no longer the one it was read
// from (replaced, removed, of another version), or is full.
var errStale = errors.New("entry file changed since read")

// AddFrames adds to e, an entry of key read from c (or written to it),
// the frames of the addresses of frames it does not know, and adds them
// to the cache: appended to e's file as a delta when that file is still
// under key, unchanged but for deltas, and its deltas are few and small
// next to it; otherwise by writing e whole (Put), its deltas merged in.
// An entry not read from c is written whole.
func (c *Cache) AddFrames(key string, e *Entry, frames map[uint64][]symbol.Frame) error {
	add := make(map[uint64][]symbol.Frame, len(frames))
	for va, fr := range frames {
		if _, ok := e.FramesAt(va); !ok {
			add[va] = fr
		}
	}
	if len(add) == 0 {
		return nil
	}
	if e.Frames == nil {
		e.Frames = make(map[uint64][]symbol.Frame, len(add))
	}
	for va, fr := range add {
		e.Frames[va] = fr
	}
	f := e.file
	if f.payload == 0 || f.bad || f.deltas >= maxDeltas {
		return c.Put(key, e)
	}
	d := encodeDelta(f.sum, add)
	if uint64(f.deltaBytes+len(d)) > f.payload {
		return c.Put(key, e)
	}
	if err := c.appendDelta(key, f, d); err != nil {
		if errors.Is(err, errStale) {
			return c.Put(key, e)
		}
		return c.written1(err)
	}
	e.file.deltas++
	e.file.deltaBytes += len(d)
	return c.written1(nil)
}

// appendDelta appends the delta d to the file of key when it still holds
// the payload f says, and room for d within MaxEntrySize; errStale when
// not. The file is opened without following symbolic links and checked
// as Get checks it.
func (c *Cache) appendDelta(key string, f fileRef, d []byte) error {
	if !validKey(key) {
		return fmt.Errorf("invalid key %q", key)
	}
	file, err := c.root.OpenFile(key, os.O_RDWR|os.O_APPEND|unix.O_NOFOLLOW|unix.O_NONBLOCK, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return errStale
	}
	if err != nil {
		return fmt.Errorf("%s: %w", filepath.Join(c.dir, key), err)
	}
	defer file.Close()
	st, err := c.check(file)
	if err != nil {
		return fmt.Errorf("%s: %w", filepath.Join(c.dir, key), err)
	}
	if st.Size()+int64(len(d)) > MaxEntrySize || uint64(st.Size()) < uint64(headerSize)+f.payload {
		return errStale
	}
	var h [headerSize]byte
	if _, err := file.ReadAt(h[:], 0); err != nil {
		return errStale
	}
	if string(h[:len(magic)]) != magic || binary.LittleEndian.Uint32(h[len(magic):]) != version ||
		binary.LittleEndian.Uint64(h[len(magic)+4:]) != f.payload || binary.LittleEndian.Uint32(h[len(magic)+12:]) != f.sum {
		return errStale
	}
	// One write: appends of other recorders land before or after it,
	// and a reader that sees part of it rejects that part.
	if _, err := file.Write(d); err != nil {
		return fmt.Errorf("%s: %w", filepath.Join(c.dir, key), err)
	}
	return nil
}
