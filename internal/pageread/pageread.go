// Package pageread reads a range of a file in pages as its bytes are
// asked for, keeping a bounded number of them: what symbol and unwind use
// for a Go binary's line table (8 MB for the Go compiler) of which a
// recording needs a small part. The range may also be held whole, for
// bytes already in memory.
package pageread

import (
	"io"
	"sync"
)

// PageSize is the unit in which a Source reads its file unless told
// another.
const PageSize = 4096

// Source is a range of a file read in pages, or bytes held whole. Safe
// for concurrent use.
type Source struct {
	whole []byte // the bytes, when held whole; else read from r
	r     io.ReaderAt
	off   int64  // file offset of byte 0
	n     uint64 // length

	mu       sync.Mutex
	pages    map[uint64][]byte // by page index
	maxPages int
	pageSize uint64
	// reuse says the buffers of pages let go are read into again
	// (ReusePages); spare holds them.
	reuse bool
	spare [][]byte
}

// Held returns a Source of b.
func Held(b []byte) *Source { return &Source{whole: b, n: uint64(len(b))} }

// File returns a Source of the n bytes of r at off, which the caller has
// checked lie within r, read in pages of pageSize bytes (PageSize if 0),
// at most maxPages of them kept (at least one): past it they are all let
// go and read again as asked for.
func File(r io.ReaderAt, off int64, n uint64, pageSize, maxPages int) *Source {
	if pageSize <= 0 {
		pageSize = PageSize
	}
	return &Source{r: r, off: off, n: n, pages: make(map[uint64][]byte), maxPages: max(maxPages, 1), pageSize: uint64(pageSize)}
}

// ReusePages has s read later pages into the buffers of those it lets
// go, rather than into new ones: a slice At gave, or Window passed, is
// then good only until the next call of At or Window. For a reader that
// copies what it keeps as it goes (the unwinder's table of a Go binary,
// whose 8 MB line table of the Go compiler was read into new pages of
// 64 KiB at every recording that sampled it).
func (s *Source) ReusePages() {
	s.mu.Lock()
	s.reuse = true
	s.mu.Unlock()
}

// Len returns the length of the range.
func (s *Source) Len() uint64 { return s.n }

// IsHeld reports whether the bytes are held whole.
func (s *Source) IsHeld() bool { return s.whole != nil || s.r == nil }

// Pages returns how many pages s keeps.
func (s *Source) Pages() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.pages)
}

// At returns up to want bytes from off: fewer at the end of the range or
// where the file cannot be read, nil past its end. The slice must not be
// modified.
func (s *Source) At(off, want uint64) []byte {
	if off >= s.n || want == 0 {
		return nil
	}
	want = min(want, s.n-off)
	if s.IsHeld() {
		return s.whole[off : off+want]
	}
	ps := s.pageSize
	first, last := off/ps, (off+want-1)/ps
	s.mu.Lock()
	defer s.mu.Unlock()
	if first == last {
		p := s.page(first)
		lo := off - first*ps
		return p[min(lo, uint64(len(p))):min(lo+want, uint64(len(p)))]
	}
	out := make([]byte, 0, want)
	for i := first; i <= last; i++ {
		p := s.page(i)
		lo, hi := uint64(0), uint64(len(p))
		if i == first {
			lo = off - first*ps
		}
		if i == last {
			hi = min(hi, off+want-i*ps)
		}
		if lo >= hi {
			break
		}
		out = append(out, p[lo:hi]...)
		if uint64(len(p)) < ps && i != last {
			break // a short read: what follows is not contiguous
		}
	}
	return out
}

// page returns page i, reading it on first use; short or empty where the
// file could not be read. s.mu is held.
func (s *Source) page(i uint64) []byte {
	if p, ok := s.pages[i]; ok {
		return p
	}
	if len(s.pages) >= s.maxPages {
		if s.reuse {
			for _, p := range s.pages {
				s.spare = append(s.spare, p[:cap(p)])
			}
		}
		clear(s.pages)
	}
	size := min(s.pageSize, s.n-i*s.pageSize)
	var p []byte
	if k := len(s.spare); k > 0 && uint64(cap(s.spare[k-1])) >= size {
		p, s.spare = s.spare[k-1][:size], s.spare[:k-1]
	} else {
		p = make([]byte, size)
	}
	k, _ := s.r.ReadAt(p, s.off+int64(i*s.pageSize))
	p = p[:k]
	s.pages[i] = p
	return p
}

// Window calls read with the bytes from off, 256 of them and doubling
// while read reports (false) that it ran out of them and more are left:
// for a table whose length is known only by decoding it.
func (s *Source) Window(off uint64, read func([]byte) bool) {
	for n := uint64(256); ; n *= 2 {
		b := s.At(off, n)
		if read(b) || uint64(len(b)) < n {
			return
		}
	}
}
