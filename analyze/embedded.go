package analyze

import (
	"slices"

	"nsprof/capture"
)

// embeddedFiles gathers the FILE_CHUNK data of the few files Load reads.
// It keeps the chunks as they come, views of the capture when the reader's
// frames stay valid, and joins them only when a file is asked for: the
// embedded kallsyms, the largest of them, is usually never needed.
type embeddedFiles struct {
	files map[string]*embeddedFile
}

type embeddedFile struct {
	chunks   [][]byte
	complete bool
}

// add adds one chunk of the file at path, copying data when own is false.
// As [capture.Files] does, it ignores chunks after the one with last set.
func (e *embeddedFiles) add(path string, data []byte, last, own bool) {
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
	if !own {
		data = slices.Clone(data)
	}
	if len(data) > 0 {
		f.chunks = append(f.chunks, data)
	}
	f.complete = last
}

// has reports whether the capture embeds the file at path, stored as is
// or compressed at path+".gz".
func (e *embeddedFiles) has(path string) bool {
	return e.files[path] != nil || e.files[path+".gz"] != nil
}

// raw returns the stored bytes of the file at exactly path.
func (e *embeddedFiles) raw(path string) ([]byte, bool) {
	f := e.files[path]
	if f == nil {
		return nil, false
	}
	switch len(f.chunks) {
	case 0:
		return nil, true
	case 1:
		return f.chunks[0], true
	}
	n := 0
	for _, c := range f.chunks {
		n += len(c)
	}
	b := make([]byte, 0, n)
	for _, c := range f.chunks {
		b = append(b, c...)
	}
	return b, true
}

// capture returns a [capture.Files] holding the files at paths and at
// their ".gz" names, for what reads embedded files through one.
func (e *embeddedFiles) capture(paths ...string) *capture.Files {
	fs := &capture.Files{}
	for _, p := range paths {
		for _, name := range []string{p, p + ".gz"} {
			if b, ok := e.raw(name); ok {
				fs.Add(&capture.FileChunk{Path: name, Data: b, IsLast: true})
			}
		}
	}
	return fs
}
