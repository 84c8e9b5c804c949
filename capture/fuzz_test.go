package capture

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
)

// FuzzReader feeds arbitrary bytes to the Reader: it must never panic,
// return a frame together with an error, or move backwards, and it must stop.
// Every frame it returns must also survive the Writer: written in the
// file's byte order and read back, it is the same frame.
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
		var frames []Frame
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
			frames = append(frames, fr)
			d.Append(nil, fr)
			if c, ok := fr.(*FileChunk); ok {
				fs.Add(c)
			}
		}
		for _, e := range fs.List() {
			fs.Lookup(e.Path)
		}
		checkRewrite(t, r.Header(), frames)
	})
}

// checkRewrite writes frames with a Writer in the byte order of hdr and
// reads them back: each must come back equal. Frames of unknown types
// (ReaderOptions.AllowUnknown) have no encoding and are left out.
func checkRewrite(t *testing.T, hdr FileHeader, frames []Frame) {
	frames = slices.DeleteFunc(slices.Clone(frames), func(f Frame) bool {
		_, unknown := f.(*Unknown)
		return unknown
	})
	var order binary.ByteOrder = binary.LittleEndian
	if hdr.BigEndian {
		order = binary.BigEndian
	}
	var out bytes.Buffer
	w, err := NewWriterWithOptions(&out, WriterOptions{ByteOrder: order, NewFrameTypes: true, StartTime: 1, Clock: func() int64 { return math.MinInt64 }})
	if err != nil {
		t.Fatal(err)
	}
	frames = slices.DeleteFunc(frames, func(f Frame) bool {
		// Counter id 0 marks an unused slot of a CTRSET group, so the
		// Writer refuses to define it; the Reader reads what is there.
		if d, ok := f.(*CounterDefine); ok {
			for _, c := range d.Counters {
				if c.ID == 0 {
					if w.WriteFrame(f) == nil {
						t.Fatalf("CTRDEF with counter id 0 written: %+v", f)
					}
					return true
				}
			}
		}
		return false
	})
	for i, fr := range frames {
		if err := w.WriteFrame(fr); err != nil {
			t.Fatalf("frame %d (%s) read but not written: %v\n%+v", i, fr.Type(), err, fr)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	r, err := NewReaderWithOptions(bytes.NewReader(out.Bytes()), ReaderOptions{AllowUnknown: true})
	if err != nil {
		t.Fatalf("rewritten capture: %v", err)
	}
	for i, want := range frames {
		got, err := r.Next()
		if err != nil {
			t.Fatalf("rewritten frame %d (%s): %v", i, want.Type(), err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("frame %d changed when rewritten:\n got %+v\nwant %+v", i, got, want)
		}
	}
	if fr, err := r.Next(); err != io.EOF {
		t.Fatalf("rewritten capture: extra frame %v, error %v", fr, err)
	}
}

// mergedFrame reports whether f is part of what CatFiles merges rather
// than copies: a chunk of a merged file, or the METADATA frame before a
// symbol bundle.
func mergedFrame(f Frame) bool {
	return divert(f, &Files{})
}

// FuzzCat merges arbitrary bytes into a capture: it must never panic, what
// it writes must read back cleanly, and an undamaged input must keep its
// frames (but for the files it merges, written anew).
func FuzzCat(f *testing.F) {
	for _, s := range fuzzSeeds(f) {
		f.Add(s)
	}
	f.Add(nsprofInput(f, 10, 1000))
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
		var got [256]int
		for {
			f, rerr := r.Next()
			if rerr == io.EOF {
				break
			}
			if rerr != nil {
				t.Fatalf("merged output damaged: %v (cat error %v)", rerr, err)
			}
			if !mergedFrame(f) {
				got[f.Type()]++
			}
		}
		if err != nil {
			return
		}
		// An undamaged input keeps its frames of every type whose frames
		// Cat copies one for one. JIT maps and counters are renumbered
		// into the destination's own frames; without NewFrameTypes,
		// TRACE frames become SAMPLEs and DBUS_MESSAGE frames are dropped.
		var want [256]int
		if in, err := NewReaderWithOptions(bytes.NewReader(b), ReaderOptions{AllowUnknown: true}); err == nil {
			for f, err := in.Next(); err == nil; f, err = in.Next() {
				if !mergedFrame(f) {
					want[f.Type()]++
				}
			}
		}
		want[TypeSample] += want[TypeTrace]
		for _, ty := range []FrameType{TypeTimestamp, TypeSample, TypeMap, TypeProcess, TypeFork, TypeExit, TypeMark,
			TypeMetadata, TypeLog, TypeFileChunk, TypeAllocation, TypeOverlay} {
			if got[ty] != want[ty] {
				t.Fatalf("%s frames: %d merged, %d in the input", ty, got[ty], want[ty])
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
