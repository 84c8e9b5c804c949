package symbol

import (
	"io"
	"sync"
)

// goPageSize is the unit in which a Go line table is read from its file.
const goPageSize = 4096

// maxGoPages bounds the pages a goSource keeps (1 MiB): past it they are
// all let go and read again as asked for. The lines of one function touch
// some ten pages (the function table, its record, its pcvalue tables, its
// file and function names), the lines of a thousand spread over most of
// the Go compiler's 8 MB table: kept, they would be the table again.
const maxGoPages = 256

// goSource is the bytes of a Go line table (or of the section holding
// go:func.*), read from the file in pages as they are asked for, or held
// whole. Reading on demand keeps the Go compiler's 8 MB table out of the
// heap while the lines of a few thousand addresses are looked up, next to
// another file's DWARF: it was the largest thing the recorder held when
// its heap peaked, at the end of a recording over a compile loop. Safe for
// concurrent use.
type goSource struct {
	whole []byte // the bytes, when held whole; else read from r
	r     io.ReaderAt
	off   int64  // file offset of byte 0
	n     uint64 // length

	mu       sync.Mutex
	pages    map[uint64][]byte // by page index
	maxPages int
}

// heldSource returns a goSource of b.
func heldSource(b []byte) *goSource { return &goSource{whole: b, n: uint64(len(b))} }

// fileSource returns a goSource of the n bytes of r at off, which the
// caller has checked lie within r.
func fileSource(r io.ReaderAt, off int64, n uint64) *goSource {
	return &goSource{r: r, off: off, n: n, pages: make(map[uint64][]byte), maxPages: maxGoPages}
}

// at returns up to want bytes from off: fewer at the end of the source or
// where the file cannot be read, nil past its end. The slice must not be
// modified.
func (s *goSource) at(off, want uint64) []byte {
	if off >= s.n {
		return nil
	}
	want = min(want, s.n-off)
	if s.whole != nil {
		return s.whole[off : off+want]
	}
	first, last := off/goPageSize, (off+want-1)/goPageSize
	s.mu.Lock()
	defer s.mu.Unlock()
	if first == last {
		p := s.page(first)
		lo := off - first*goPageSize
		return p[min(lo, uint64(len(p))):min(lo+want, uint64(len(p)))]
	}
	out := make([]byte, 0, want)
	for i := first; i <= last; i++ {
		p := s.page(i)
		lo, hi := uint64(0), uint64(len(p))
		if i == first {
			lo = off - first*goPageSize
		}
		if i == last {
			hi = min(hi, off+want-i*goPageSize)
		}
		if lo >= hi {
			break
		}
		out = append(out, p[lo:hi]...)
		if uint64(len(p)) < goPageSize && i != last {
			break // a short read: what follows is not contiguous
		}
	}
	return out
}

// page returns page i, reading it on first use; short or empty where the
// file could not be read. s.mu is held.
func (s *goSource) page(i uint64) []byte {
	if p, ok := s.pages[i]; ok {
		return p
	}
	if len(s.pages) >= s.maxPages {
		clear(s.pages)
	}
	p := make([]byte, min(goPageSize, s.n-i*goPageSize))
	k, _ := s.r.ReadAt(p, s.off+int64(i*goPageSize))
	p = p[:k]
	s.pages[i] = p
	return p
}

// goSpan is a table of a goSource: the bytes from start to the source's
// end, as the pclntab's tables run to the end of the pclntab.
type goSpan struct {
	src   *goSource
	start uint64
}

// span returns the table of s from start; empty when start is past the
// end.
func (s *goSource) span(start uint64) goSpan { return goSpan{s, start} }

// len returns the length of the table.
func (t goSpan) len() uint64 {
	if t.src == nil || t.start >= t.src.n {
		return 0
	}
	return t.src.n - t.start
}

// at returns up to want bytes of the table from off, as goSource.at.
func (t goSpan) at(off, want uint64) []byte {
	if t.src == nil || off >= t.len() {
		return nil
	}
	return t.src.at(t.start+off, want)
}

// window returns the bytes of t from off that read decodes, starting
// with 256 and doubling while read reports it ran out of them (false)
// and more are left.
func (t goSpan) window(off uint64, read func([]byte) bool) {
	for n := uint64(256); ; n *= 2 {
		b := t.at(off, n)
		if read(b) || uint64(len(b)) < n {
			return
		}
	}
}
