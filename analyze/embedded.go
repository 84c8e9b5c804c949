package analyze

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"nsprof/capture"
)

// embeddedFiles gathers the FILE_CHUNK data of the few files Load reads
// in a [capture.Files], the one reassembly of embedded files: as views of
// the capture when the reader's frames stay valid, as copies, or, for a
// file likely never read, as the place of the data in the capture file,
// read back from src. The embedded kallsyms, the largest of them, is
// usually never needed: the bundle names kernel frames too.
type embeddedFiles struct {
	fs capture.Files
	// src is the capture file that extents refer to.
	src *sourceFile
}

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
// off, as [capture.Files] does.
func (e *embeddedFiles) add(path string, data []byte, off int64, last bool, mode chunkMode) {
	if e.fs.Source == nil && e.src != nil {
		e.fs.Source = e.src
	}
	c := &capture.FileChunk{Path: path, Data: data, IsLast: last}
	switch mode {
	case chunkView:
		e.fs.AddView(c)
	case chunkCopy:
		e.fs.Add(c)
	case chunkExtent:
		e.fs.AddExtent(c, off)
	}
}

// has reports whether the capture embeds the file at path, stored as is
// or compressed at path+".gz".
func (e *embeddedFiles) has(path string) bool {
	return e.fs.Has(path) || e.fs.Has(path+".gz")
}

// capture returns a [capture.Files] holding the files at paths and at
// their ".gz" names, for what reads embedded files through one.
func (e *embeddedFiles) capture(paths ...string) (*capture.Files, error) {
	fs := &capture.Files{}
	for _, p := range paths {
		for _, name := range []string{p, p + ".gz"} {
			b, ok, err := e.fs.Read(name)
			if err != nil {
				return nil, err
			}
			if ok {
				fs.AddView(&capture.FileChunk{Path: name, Data: b, IsLast: true})
			}
		}
	}
	return fs, nil
}

// forget drops the files at paths and at their ".gz" names once read,
// so that the profile, which keeps e for the embedded kallsyms, does not
// keep their data too.
func (e *embeddedFiles) forget(paths ...string) {
	for _, p := range paths {
		e.fs.Forget(p)
		e.fs.Forget(p + ".gz")
	}
}

// forgetAllBut drops every file but the one at path (and at path+".gz").
func (e *embeddedFiles) forgetAllBut(path string) {
	for _, f := range e.fs.List() {
		if strings.TrimSuffix(f.Path, ".gz") != path {
			e.fs.Forget(f.Path)
		}
	}
}

// lookup returns the contents of the file at path, or of path+".gz"
// decompressed within the bounds of [capture.Inflate]: [capture.Files.Lookup].
func (e *embeddedFiles) lookup(path string) ([]byte, error) {
	return e.fs.Lookup(path)
}

// ReadExtents reads the extents from the capture file, checking that it
// is the file that was loaded, unchanged.
func (s *sourceFile) ReadExtents(exts []capture.Extent) ([]byte, error) {
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
		if x.Off < 0 || x.N < 0 || x.Off+x.N > st.Size() {
			return nil, fmt.Errorf("%s: %d bytes at offset %d lie past its end", s.path, x.N, x.Off)
		}
		n += x.N
	}
	b := make([]byte, n)
	p := b
	for _, x := range exts {
		if _, err := f.ReadAt(p[:x.N], x.Off); err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return nil, fmt.Errorf("%s at offset %d: %w", s.path, x.Off, err)
		}
		p = p[x.N:]
	}
	return b, nil
}
