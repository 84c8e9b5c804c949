package capture

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// FuzzReader feeds arbitrary bytes to the Reader: it must never panic,
// return a frame together with an error, or move backwards, and it must stop.
// Seeds are in testdata/fuzz/FuzzReader.
func FuzzReader(f *testing.F) {
	for _, s := range fuzzSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := NewReaderWithOptions(bytes.NewReader(b), ReaderOptions{AllowUnknown: len(b)%2 == 0})
		if err != nil {
			if r != nil {
				t.Fatal("reader returned with error")
			}
			return
		}
		last := r.Offset()
		var d Dumper
		var fs Files
		for i := 0; ; i++ {
			fr, err := r.Next()
			if err != nil {
				if fr != nil {
					t.Fatal("frame returned with error")
				}
				var fe *FormatError
				if err != io.EOF && !errors.As(err, &fe) {
					t.Fatalf("error of type %T: %v", err, err)
				}
				break
			}
			if r.Offset() <= last || r.Offset() > int64(len(b)) {
				t.Fatalf("offset went from %d to %d of %d", last, r.Offset(), len(b))
			}
			last = r.Offset()
			d.Append(nil, fr)
			if c, ok := fr.(*FileChunk); ok {
				fs.Add(c)
			}
		}
		for _, e := range fs.List() {
			fs.Lookup(e.Path)
		}
	})
}

// FuzzCat merges arbitrary bytes into a capture: it must never panic, and
// what it writes must read back cleanly.
func FuzzCat(f *testing.F) {
	for _, s := range fuzzSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var out bytes.Buffer
		err := CatFiles(&out, []io.ReadSeeker{bytes.NewReader(b)}, []string{"fuzz"}, CatOptions{MapPID: func(id int32) int32 { return id + 1 }})
		if err != nil && out.Len() == 0 {
			return
		}
		r, rerr := NewReader(bytes.NewReader(out.Bytes()))
		if rerr != nil {
			t.Fatalf("merged output unreadable: %v (cat error %v)", rerr, err)
		}
		for {
			_, rerr := r.Next()
			if rerr == io.EOF {
				break
			}
			if rerr != nil {
				t.Fatalf("merged output damaged: %v (cat error %v)", rerr, err)
			}
		}
	})
}

// fuzzSeeds returns valid and damaged captures. The same bytes are checked
// in under testdata/fuzz; NSPROF_WRITE_SEEDS=1 regenerates them.
func fuzzSeeds(tb testing.TB) [][]byte {
	le := writeAll(tb, WriterOptions{ByteOrder: binary.LittleEndian, NewFrameTypes: true, StartTime: 1}, allFrames())
	be := writeAll(tb, WriterOptions{ByteOrder: binary.BigEndian, NewFrameTypes: true, StartTime: 1}, allFrames())
	seeds := [][]byte{le, be, le[:len(le)-5], le[:HeaderSize+30], le[:100]}
	if os.Getenv("NSPROF_WRITE_SEEDS") == "1" {
		for _, name := range []string{"FuzzReader", "FuzzCat"} {
			dir := filepath.Join("testdata", "fuzz", name)
			os.MkdirAll(dir, 0o755)
			for i, s := range seeds {
				data := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", s)
				os.WriteFile(filepath.Join(dir, fmt.Sprintf("seed-%d", i)), []byte(data), 0o644)
			}
		}
	}
	return seeds
}
