package capture

import (
	"bytes"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
)

// Files reassembles the files embedded in a capture as FILE_CHUNK frames.
// Add every FILE_CHUNK in file order; a file is the data of the chunks with
// its path up to and including the first with IsLast, as Sysprof reads them.
// Chunks for a path after its last chunk are ignored. It is the one
// reassembly of nsprof: the reports' loader keeps chunks as views of a
// mapped capture ([Files.AddView]) or, for a large file it may never
// read, as their place in the capture file ([Files.AddExtent]), read back
// through Source when asked for. The zero value is ready to use; a Files
// must not be modified concurrently with other calls.
type Files struct {
	files map[string]*embedded
	order []string
	// Source reads back the data of chunks added with AddExtent; nil
	// when there are none.
	Source ExtentReader
}

// Extent is data left in the capture file: N bytes at offset Off.
type Extent struct{ Off, N int64 }

// ExtentReader reads back data left in a capture file, for [Files].
type ExtentReader interface {
	// ReadExtents returns the bytes of exts, concatenated.
	ReadExtents(exts []Extent) ([]byte, error)
}

type embedded struct {
	pieces   []piece
	size     int
	complete bool
	pid      int32
	time     int64
}

// piece is the data of consecutive chunks: bytes held (owned, when Files
// made them and may append to them), extents of the capture file, or
// only their size (dropped).
type piece struct {
	data    []byte
	owned   bool
	exts    []Extent
	dropped int
}

// Add adds one chunk, copying its data.
func (fs *Files) Add(c *FileChunk) {
	if e := fs.chunk(c); e != nil && len(c.Data) > 0 {
		if n := len(e.pieces); n > 0 && e.pieces[n-1].owned {
			e.pieces[n-1].data = append(e.pieces[n-1].data, c.Data...)
		} else {
			e.pieces = append(e.pieces, piece{data: bytes.Clone(c.Data), owned: true})
		}
		e.size += len(c.Data)
	}
}

// AddView adds one chunk, keeping c.Data itself: the caller keeps it
// valid and unchanged as long as fs is used.
func (fs *Files) AddView(c *FileChunk) {
	if e := fs.chunk(c); e != nil && len(c.Data) > 0 {
		e.pieces = append(e.pieces, piece{data: c.Data})
		e.size += len(c.Data)
	}
}

// AddExtent adds one chunk whose len(c.Data) bytes are at offset off of
// the capture file, keeping only that place: they are read through
// fs.Source when the file is asked for.
func (fs *Files) AddExtent(c *FileChunk, off int64) {
	if e := fs.chunk(c); e != nil && len(c.Data) > 0 {
		x := Extent{Off: off, N: int64(len(c.Data))}
		if n := len(e.pieces); n > 0 && e.pieces[n-1].exts != nil {
			e.pieces[n-1].exts = append(e.pieces[n-1].exts, x)
		} else {
			e.pieces = append(e.pieces, piece{exts: []Extent{x}})
		}
		e.size += len(c.Data)
	}
}

// AddSize adds one chunk keeping only its size: [Files.List] counts it,
// and reading the file fails. For a reader that lists embedded files
// without reading them.
func (fs *Files) AddSize(c *FileChunk) {
	if e := fs.chunk(c); e != nil && len(c.Data) > 0 {
		if n := len(e.pieces); n > 0 && e.pieces[n-1].dropped > 0 {
			e.pieces[n-1].dropped += len(c.Data)
		} else {
			e.pieces = append(e.pieces, piece{dropped: len(c.Data)})
		}
		e.size += len(c.Data)
	}
}

// chunk returns the file c belongs to, nil when its last chunk came
// already, and marks it complete when c is its last.
func (fs *Files) chunk(c *FileChunk) *embedded {
	if fs.files == nil {
		fs.files = make(map[string]*embedded)
	}
	e := fs.files[c.Path]
	if e == nil {
		e = &embedded{pid: c.PID, time: c.Time}
		fs.files[c.Path] = e
		fs.order = append(fs.order, c.Path)
	}
	if e.complete {
		return nil
	}
	e.complete = c.IsLast
	return e
}

// EmbeddedFile describes one embedded file.
type EmbeddedFile struct {
	// Path as stored, including any ".gz" suffix.
	Path string
	// Size of the stored (possibly compressed) data.
	Size int
	// Complete is false when no chunk with IsLast was seen, as in a
	// truncated capture.
	Complete bool
	// PID and Time of the first chunk.
	PID  int32
	Time int64
}

// List returns the embedded files sorted by path.
func (fs *Files) List() []EmbeddedFile {
	out := make([]EmbeddedFile, 0, len(fs.order))
	for _, p := range fs.order {
		e := fs.files[p]
		out = append(out, EmbeddedFile{Path: p, Size: e.size, Complete: e.complete, PID: e.pid, Time: e.time})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

// Forget drops the file at exactly path, so that its data, once read,
// is not kept for the life of fs. Has and Lookup no longer find it.
func (fs *Files) Forget(path string) {
	if _, ok := fs.files[path]; !ok {
		return
	}
	delete(fs.files, path)
	fs.order = slices.DeleteFunc(fs.order, func(p string) bool { return p == path })
}

// Has reports whether the capture embeds the file at exactly path.
func (fs *Files) Has(path string) bool { return fs.files[path] != nil }

// Read returns the stored bytes of the file at exactly path, and whether
// there is one. An error says data left in the capture file could not be
// read back.
func (fs *Files) Read(path string) ([]byte, bool, error) {
	e, ok := fs.files[path]
	if !ok {
		return nil, false, nil
	}
	for _, p := range e.pieces {
		if p.dropped > 0 {
			return nil, true, fmt.Errorf("embedded file %s: its data was not kept", path)
		}
	}
	if len(e.pieces) == 1 && e.pieces[0].exts == nil {
		return e.pieces[0].data, true, nil
	}
	b := make([]byte, 0, e.size)
	for _, p := range e.pieces {
		if p.exts == nil {
			b = append(b, p.data...)
			continue
		}
		if fs.Source == nil {
			return nil, true, fmt.Errorf("embedded file %s: no capture file to read %d bytes from", path, e.size)
		}
		d, err := fs.Source.ReadExtents(p.exts)
		if err != nil {
			return nil, true, fmt.Errorf("embedded file %s: %w", path, err)
		}
		b = append(b, d...)
	}
	return b, true, nil
}

// ReadOwned is [Files.Read] returning bytes of their own, never a view of
// data added with [Files.AddView]: a file stored in one piece is copied.
func (fs *Files) ReadOwned(path string) ([]byte, bool, error) {
	e, ok := fs.files[path]
	if ok && len(e.pieces) == 1 && e.pieces[0].exts == nil && e.pieces[0].dropped == 0 && !e.pieces[0].owned {
		return bytes.Clone(e.pieces[0].data), true, nil
	}
	return fs.Read(path)
}

// Raw returns the stored bytes of the file at exactly path. A file whose
// data cannot be read back (see [Files.Read]) is reported as absent.
func (fs *Files) Raw(path string) ([]byte, bool) {
	b, ok, err := fs.Read(path)
	if err != nil {
		return nil, false
	}
	return b, ok
}

// Lookup returns the contents of the file at path. Like Sysprof's
// sysprof_document_lookup_file it also finds path+".gz" and decompresses it.
// A path ending in ".gz" is returned as stored. Decompression is bounded
// as [Inflate] says.
func (fs *Files) Lookup(path string) ([]byte, error) {
	if b, ok, err := fs.Read(path); ok || err != nil {
		return b, err
	}
	if strings.HasSuffix(path, ".gz") {
		return nil, fmt.Errorf("embedded file %s: not found", path)
	}
	z, ok, err := fs.Read(path + ".gz")
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("embedded file %s: not found", path)
	}
	return Inflate(path+".gz", z)
}

// ReadFiles reads every frame of r and returns its embedded files, with the
// error that stopped reading, if any (nil at a clean end).
func ReadFiles(r *Reader) (*Files, error) {
	fs := &Files{}
	for {
		f, err := r.Next()
		if err == io.EOF {
			return fs, nil
		}
		if err != nil {
			return fs, err
		}
		if c, ok := f.(*FileChunk); ok {
			fs.Add(c)
		}
	}
}
