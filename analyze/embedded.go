package analyze

import (
	"fmt"
	"io"
	"os"
	"slices"
	"time"

	"nsprof/capture"
)

// embeddedFiles gathers the FILE_CHUNK data of the few files Load reads.
// It keeps the chunks as they come, as views of the capture when the
// reader's frames stay valid, as copies, or, for a file likely never read,
// as the place of the data in the capture file; it joins them only when a
// file is asked for. The embedded kallsyms, the largest of them, is
// usually never needed: the bundle names kernel frames too.
type embeddedFiles struct {
	files map[string]*embeddedFile
	// src is the capture file that extents refer to.
	src *sourceFile
}

type embeddedFile struct {
	chunks   [][]byte
	extents  []extent
	complete bool
}

// extent is data left in the capture file: length n at offset off.
type extent struct{ off, n int64 }

// sourceFile names the capture file and what it was when loaded, so that
// data read from it later is read from the same file.
type sourceFile struct {
	path string
	info os.FileInfo
}

// chunkMode says how embeddedFiles.add keeps a chunk's data.
type chunkMode int

const (
	chunkView   chunkMode = iota // keep the slice given
	chunkCopy                    // keep a copy
	chunkExtent                  // keep its offset in src
)

// add adds one chunk of the file at path, whose data is at file offset
// off. As [capture.Files] does, it ignores chunks after the one with last
// set.
func (e *embeddedFiles) add(path string, data []byte, off int64, last bool, mode chunkMode) {
	if e.files == nil {
		e.files = make(map[string]*embeddedFile)
	}
	f := e.files[path]
	if f == nil {
		f = &embeddedFile{}
		e.files[path] = f
	}
	if f.complete {
		return
	}
	f.complete = last
	if len(data) == 0 {
		return
	}
	switch mode {
	case chunkView:
		f.chunks = append(f.chunks, data)
	case chunkCopy:
		f.chunks = append(f.chunks, slices.Clone(data))
	case chunkExtent:
		f.extents = append(f.extents, extent{off: off, n: int64(len(data))})
	}
}

// has reports whether the capture embeds the file at path, stored as is
// or compressed at path+".gz".
func (e *embeddedFiles) has(path string) bool {
	return e.files[path] != nil || e.files[path+".gz"] != nil
}

// raw returns the stored bytes of the file at exactly path, and whether
// there is one. An error says data left in the capture file could not be
// read back.
func (e *embeddedFiles) raw(path string) ([]byte, bool, error) {
	f := e.files[path]
	if f == nil {
		return nil, false, nil
	}
	if len(f.extents) > 0 {
		b, err := e.src.read(f.extents)
		return b, true, err
	}
	switch len(f.chunks) {
	case 0:
		return nil, true, nil
	case 1:
		return f.chunks[0], true, nil
	}
	n := 0
	for _, c := range f.chunks {
		n += len(c)
	}
	b := make([]byte, 0, n)
	for _, c := range f.chunks {
		b = append(b, c...)
	}
	return b, true, nil
}

// capture returns a [capture.Files] holding the files at paths and at
// their ".gz" names, for what reads embedded files through one.
func (e *embeddedFiles) capture(paths ...string) (*capture.Files, error) {
	fs := &capture.Files{}
	for _, p := range paths {
		for _, name := range []string{p, p + ".gz"} {
			b, ok, err := e.raw(name)
			if err != nil {
				return nil, fmt.Errorf("embedded file %s: %w", name, err)
			}
			if ok {
				fs.Add(&capture.FileChunk{Path: name, Data: b, IsLast: true})
			}
		}
	}
	return fs, nil
}

// lookup returns the contents of the file at path, or, as
// [capture.Files.Lookup] does, of path+".gz" decompressed within the
// bounds of [capture.Inflate].
func (e *embeddedFiles) lookup(path string) ([]byte, error) {
	if b, ok, err := e.raw(path); ok || err != nil {
		if err != nil {
			err = fmt.Errorf("embedded file %s: %w", path, err)
		}
		return b, err
	}
	z, ok, err := e.raw(path + ".gz")
	if err != nil {
		return nil, fmt.Errorf("embedded file %s.gz: %w", path, err)
	}
	if !ok {
		return nil, fmt.Errorf("embedded file %s: not found", path)
	}
	return capture.Inflate(path+".gz", z)
}

// read reads the extents from the capture file, checking that it is the
// file that was loaded, unchanged.
func (s *sourceFile) read(exts []extent) ([]byte, error) {
	if s == nil {
		return nil, fmt.Errorf("no capture file to read from")
	}
	f, err := os.Open(s.path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !os.SameFile(st, s.info) || st.Size() != s.info.Size() || !st.ModTime().Equal(s.info.ModTime()) {
		return nil, fmt.Errorf("%s changed since it was loaded (size %d, modified %s)", s.path, st.Size(), st.ModTime().Format(time.RFC3339Nano))
	}
	n := int64(0)
	for _, x := range exts {
		if x.off < 0 || x.n < 0 || x.off+x.n > st.Size() {
			return nil, fmt.Errorf("%s: %d bytes at offset %d lie past its end", s.path, x.n, x.off)
		}
		n += x.n
	}
	b := make([]byte, n)
	p := b
	for _, x := range exts {
		if _, err := f.ReadAt(p[:x.n], x.off); err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return nil, fmt.Errorf("%s at offset %d: %w", s.path, x.off, err)
		}
		p = p[x.n:]
	}
	return b, nil
}
