package capture

import (
	"bytes"
	"compress/gzip"
	"testing"
)

// extentSource reads extents of an in-memory capture.
type extentSource []byte

func (s extentSource) ReadExtents(exts []Extent) ([]byte, error) {
	var b []byte
	for _, x := range exts {
		b = append(b, s[x.Off:x.Off+x.N]...)
	}
	return b, nil
}

// TestFilesKeepModes reassembles one chunk stream (split files, empty
// chunks, chunks after the last, a gzip file) keeping the data as
// copies, as views and as extents of the capture: every file reads the
// same in all three.
func TestFilesKeepModes(t *testing.T) {
	var z bytes.Buffer
	zw := gzip.NewWriter(&z)
	zw.Write([]byte("ffffffff81000000 T _stext\n"))
	zw.Close()
	chunks := []*FileChunk{
		{Path: "/a", Data: []byte("hel")},
		{Path: "/proc/kallsyms.gz", Data: z.Bytes()[:5]},
		{Path: "/a", Data: nil},
		{Path: "/a", Data: []byte("lo"), IsLast: true},
		{Path: "/a", Data: []byte("ignored after the last")},
		{Path: "/proc/kallsyms.gz", Data: z.Bytes()[5:], IsLast: true},
		{Path: "/partial", Data: []byte("no last chunk")},
	}
	// The "capture file": the chunks' data one after the other.
	var file []byte
	offs := make([]int64, len(chunks))
	for i, c := range chunks {
		offs[i] = int64(len(file))
		file = append(file, c.Data...)
	}
	var copies, views, extents Files
	extents.Source = extentSource(file)
	for i, c := range chunks {
		copies.Add(c)
		views.AddView(c)
		extents.AddExtent(c, offs[i])
	}
	for _, path := range []string{"/a", "/proc/kallsyms", "/partial", "/missing"} {
		want, werr := copies.Lookup(path)
		for name, fs := range map[string]*Files{"views": &views, "extents": &extents} {
			got, err := fs.Lookup(path)
			if !bytes.Equal(got, want) || (err == nil) != (werr == nil) {
				t.Errorf("%s: %s: %q, %v; copies: %q, %v", path, name, got, err, want, werr)
			}
		}
	}
	if b, _ := copies.Lookup("/a"); string(b) != "hello" {
		t.Errorf("/a = %q", b)
	}
	if l := extents.List(); len(l) != 3 || l[0].Path != "/a" || l[0].Size != 5 || !l[0].Complete || l[1].Complete {
		t.Errorf("List = %+v", l)
	}
	extents.Source = nil
	if _, err := extents.Lookup("/a"); err == nil {
		t.Error("extents without a source: no error")
	}
}

func TestFilesForget(t *testing.T) {
	var fs Files
	fs.Add(&FileChunk{Path: "/a", Data: []byte("aa"), IsLast: true})
	fs.AddView(&FileChunk{Path: "/b", Data: []byte("bb"), IsLast: true})
	fs.Forget("/a")
	fs.Forget("/missing")
	if fs.Has("/a") {
		t.Error("/a still held after Forget")
	}
	if _, err := fs.Lookup("/a"); err == nil {
		t.Error("Lookup found /a after Forget")
	}
	if l := fs.List(); len(l) != 1 || l[0].Path != "/b" {
		t.Errorf("List after Forget = %v, want /b alone", l)
	}
	if b, err := fs.Lookup("/b"); err != nil || string(b) != "bb" {
		t.Errorf("Lookup(/b) = %q, %v", b, err)
	}
}

// A file kept by size only is listed with its size and cannot be read.
func TestFilesAddSize(t *testing.T) {
	var fs Files
	fs.AddSize(&FileChunk{Path: "big", Data: []byte("abc")})
	fs.AddSize(&FileChunk{Path: "big", Data: []byte("defg"), IsLast: true})
	fs.AddSize(&FileChunk{Path: "big", Data: []byte("after the last")})
	l := fs.List()
	if len(l) != 1 || l[0].Path != "big" || l[0].Size != 7 || !l[0].Complete {
		t.Fatalf("List = %+v, want big of 7 bytes, complete", l)
	}
	if b, ok, err := fs.Read("big"); !ok || err == nil || b != nil {
		t.Errorf("Read = %q, %v, %v; want no data, found, an error", b, ok, err)
	}
}

// ReadOwned copies a file kept as one view, so the view's memory may go.
func TestFilesReadOwned(t *testing.T) {
	var fs Files
	data := []byte("kept as a view")
	fs.AddView(&FileChunk{Path: "v", Data: data, IsLast: true})
	b, ok, err := fs.ReadOwned("v")
	if !ok || err != nil || string(b) != "kept as a view" {
		t.Fatalf("ReadOwned = %q, %v, %v", b, ok, err)
	}
	copy(data, "CHANGED")
	if string(b) != "kept as a view" {
		t.Errorf("ReadOwned returned a view: %q after the data changed", b)
	}
}
