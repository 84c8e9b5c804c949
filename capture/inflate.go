package capture

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"strings"

	"github.com/klauspost/compress/gzip"
)

// MaxInflateRatio bounds how many times larger than its stored gzip data
// an embedded file may decompress to. Real embedded files compress far
// less: measured on a capture of this machine, /proc/kallsyms 6.3:1,
// LinesFile 5.1:1, SymbolsFile 3.7:1 (gzip -9); 32 leaves five times that
// margin, while deflate can reach 1032:1 and a 2 MB gzip bomb would
// otherwise stand for 2 GB. Together with [MaxInflated] it bounds the
// memory an embedded file costs to at most 32 times its stored size.
const MaxInflateRatio = 32

// Format bounds of the decompressed embedded files a reader parses.
const (
	// maxKallsymsSize: /proc/kallsyms is 5 to 20 MiB on distribution
	// kernels with their modules loaded (about 200,000 symbols of 30
	// to 100 bytes a line); 128 MiB allows six times the largest.
	maxKallsymsSize = 128 << 20
	// maxBundleSize bounds SymbolsFile and LinesFile: a record per
	// sampled address, about 40 and 90 bytes each; 256 MiB is some 3
	// million addresses, more than a long whole-system capture samples.
	maxBundleSize = 256 << 20
	// maxOtherSize bounds any other embedded file, which only `dump -x`
	// reads (and /proc files are far smaller).
	maxOtherSize = 1 << 30
)

// MaxInflated returns the largest size the file at path (without its
// ".gz") may decompress to when storedSize bytes of gzip data hold it:
// the smaller of a bound set by what the file is ([SymbolsFile],
// [LinesFile] and /proc/kallsyms, which readers parse, or 1 GiB for any
// other) and [MaxInflateRatio] times storedSize (at least 1 MiB, so small
// files of long runs still decompress).
func MaxInflated(path string, storedSize int) int64 {
	limit := int64(maxOtherSize)
	switch strings.TrimSuffix(path, ".gz") {
	case "/proc/kallsyms":
		limit = maxKallsymsSize
	case SymbolsFile, LinesFile:
		limit = maxBundleSize
	}
	return min(limit, max(1<<20, MaxInflateRatio*int64(storedSize)))
}

// InflateError says an embedded gzip file decompresses to more than its
// bound ([MaxInflated]): a decompression bomb, or a file no capture
// writer produces.
type InflateError struct {
	// Path of the stored file, with its ".gz".
	Path string
	// Stored is the size of its gzip data, Limit the bound.
	Stored int
	Limit  int64
}

func (e *InflateError) Error() string {
	return fmt.Sprintf("embedded file %s: decompresses to more than %d bytes, the bound for %d stored bytes (at most %d:1 and %d MiB for this file); not read", e.Path, e.Limit, e.Stored, MaxInflateRatio, MaxInflated(e.Path, 1<<40)>>20)
}

// Inflate decompresses z, the gzip data of the embedded file at path
// (with its ".gz"), refusing to produce more than [MaxInflated] bytes
// with an [*InflateError]. The output goes into a buffer of the size the
// gzip trailer gives, in one pass, when that size is within the bound and
// right. When it is not (a trailer cannot be trusted, and holds only the
// last member's size anyway), it decompresses twice: once to measure the
// output, stopping at the bound, then into a buffer of exactly that size.
// So a bomb costs no memory, and a file within the bound only its size
// (no buffer growth, which allocated and copied twice as much).
func Inflate(path string, z []byte) ([]byte, error) {
	limit := MaxInflated(path, len(z))
	zr, err := gzip.NewReader(bytes.NewReader(z))
	if err != nil {
		return nil, fmt.Errorf("embedded file %s: %w", path, err)
	}
	n := int64(0) // bytes decompressed before measuring the rest
	if hint := int64(binary.LittleEndian.Uint32(z[len(z)-4:])); hint <= limit {
		b := make([]byte, hint)
		m, err := fillFrom(zr, b)
		switch {
		case err == io.EOF && m == len(b):
			return b, nil
		case err == io.EOF:
			return bytes.Clone(b[:m]), nil // a trailer claiming more
		case err != nil:
			return nil, fmt.Errorf("embedded file %s: %w", path, err)
		}
		n = int64(m) + 1 // more than the trailer says: measured below
	}
	rest, err := io.Copy(io.Discard, io.LimitReader(zr, limit+1-n))
	n += rest
	if err != nil {
		return nil, fmt.Errorf("embedded file %s: %w", path, err)
	}
	if n > limit {
		return nil, &InflateError{Path: path, Stored: len(z), Limit: limit}
	}
	if err := zr.Reset(bytes.NewReader(z)); err != nil {
		return nil, fmt.Errorf("embedded file %s: %w", path, err)
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(zr, b); err != nil {
		return nil, fmt.Errorf("embedded file %s: %w", path, err)
	}
	return b, nil
}

// fillFrom reads r into b until b is full or r ends, and returns how many
// bytes it read into b, with io.EOF when r ended there, or nil when b is
// full and r had more: then it has read one byte more, not kept.
func fillFrom(r io.Reader, b []byte) (int, error) {
	m := 0
	for {
		k, err := r.Read(b[m:])
		m += k
		if err != nil {
			return m, err
		}
		if m == len(b) {
			break
		}
	}
	// Full: see whether the stream ends here (a reader may return data
	// and io.EOF in separate calls).
	var one [1]byte
	for {
		k, err := r.Read(one[:])
		if k > 0 {
			return m, nil
		}
		if err != nil {
			return m, err
		}
	}
}
