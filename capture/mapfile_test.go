package capture

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestReadMappedTruncated truncates a file after it was mapped, as a
// recording overwriting a capture would: reading the mapping faults, which
// ReadMapped returns as an error wrapping ErrFileShrank instead of
// crashing. A panic of read's own is not taken for a fault.
func TestReadMappedTruncated(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.syscap")
	if err := os.WriteFile(path, make([]byte, 1<<16), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	data, unmap, info, err := MapFile(f)
	if err != nil || data == nil {
		t.Fatalf("MapFile: %v (mapped %v)", err, data != nil)
	}
	defer unmap()
	if info.Size() != 1<<16 || len(data) != 1<<16 {
		t.Fatalf("mapped %d bytes of a file of %d, want %d", len(data), info.Size(), 1<<16)
	}
	sum := 0
	if err := ReadMapped(data, func() error { sum += int(data[len(data)-1]); return nil }); err != nil {
		t.Fatalf("reading an intact mapping: %v", err)
	}
	if err := os.Truncate(path, 0); err != nil {
		t.Fatal(err)
	}
	err = ReadMapped(data, func() error {
		for _, b := range data {
			sum += int(b)
		}
		return nil
	})
	if !errors.Is(err, ErrFileShrank) {
		t.Fatalf("reading a truncated mapping: %v, want ErrFileShrank", err)
	}
	func() {
		defer func() {
			if r := recover(); r == nil {
				t.Error("a nil dereference inside read was swallowed")
			}
		}()
		var p *int
		ReadMapped(data, func() error { sum += *p; return nil })
	}()
}

// TestMapFileNotRegular: what cannot be mapped (a pipe, an empty file)
// yields no mapping and no error, so the caller reads it instead.
func TestMapFileNotRegular(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	if data, unmap, _, err := MapFile(r); data != nil || unmap != nil || err != nil {
		t.Errorf("pipe: %d bytes mapped, %v", len(data), err)
	}
	empty := filepath.Join(t.TempDir(), "empty")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(empty)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if data, unmap, info, err := MapFile(f); data != nil || unmap != nil || err != nil || info == nil {
		t.Errorf("empty file: %d bytes mapped, info %v, %v", len(data), info, err)
	}
}
