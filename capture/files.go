package capture

import (
	"bytes"
	"fmt"
	"io"
	"sort"
	"strings"
)

// Files reassembles the files embedded in a capture as FILE_CHUNK frames.
// Add every FILE_CHUNK in file order; a file is the data of the chunks with
// its path up to and including the first with IsLast, as Sysprof reads them.
// Chunks for a path after its last chunk are ignored. The zero value is
// ready to use.
type Files struct {
	files map[string]*embedded
	order []string
}

type embedded struct {
	data     bytes.Buffer
	complete bool
	pid      int32
	time     int64
}

// Add adds one chunk.
func (fs *Files) Add(c *FileChunk) {
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
		return
	}
	e.data.Write(c.Data)
	e.complete = c.IsLast
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
		out = append(out, EmbeddedFile{Path: p, Size: e.data.Len(), Complete: e.complete, PID: e.pid, Time: e.time})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

// Raw returns the stored bytes of the file at exactly path.
func (fs *Files) Raw(path string) ([]byte, bool) {
	e, ok := fs.files[path]
	if !ok {
		return nil, false
	}
	return e.data.Bytes(), true
}

// Lookup returns the contents of the file at path. Like Sysprof's
// sysprof_document_lookup_file it also finds path+".gz" and decompresses it.
// A path ending in ".gz" is returned as stored. Decompression is bounded
// as [Inflate] says.
func (fs *Files) Lookup(path string) ([]byte, error) {
	if b, ok := fs.Raw(path); ok {
		return b, nil
	}
	if strings.HasSuffix(path, ".gz") {
		return nil, fmt.Errorf("embedded file %s: not found", path)
	}
	z, ok := fs.Raw(path + ".gz")
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
