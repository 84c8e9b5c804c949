package symbol

import (
	"bytes"
	"debug/elf"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"nsprof/internal/testutils"
)

// zlibFixture returns the bytes of the fixture library with its debug
// sections compressed by objcopy (ELFCOMPRESS_ZLIB).
func zlibFixture(t *testing.T) []byte {
	t.Helper()
	so := testutils.BuildC(t, filepath.Join("testdata", "fixture.c"), "-shared", "-fPIC", "-g")
	out := filepath.Join(t.TempDir(), "zlib.so")
	run(t, "objcopy", "--compress-debug-sections=zlib", so, out)
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The sections nsprof inflates itself read as debug/elf reads them.
func TestSectionBytesMatchesDebugElf(t *testing.T) {
	data := zlibFixture(t)
	f, err := NewFile(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, s := range f.elf.Sections {
		if s.Flags&elf.SHF_COMPRESSED == 0 {
			continue
		}
		n++
		want, err := s.Data()
		if err != nil {
			t.Fatalf("%s: debug/elf: %v", s.Name, err)
		}
		got, err := f.sectionBytes(s)
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s: %d bytes, %v; debug/elf reads %d", s.Name, len(got), err, len(want))
		}
		r, err := f.openSection(s)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := io.ReadAll(r); err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s: openSection gives %d bytes, %v", s.Name, len(got), err)
		}
	}
	if n < 3 {
		t.Fatalf("%d compressed sections: objcopy compressed nothing?", n)
	}
}

// A compressed section that claims more than its stream holds, or whose
// stream is damaged, gives what could be read and an error.
func TestSectionBytesDamaged(t *testing.T) {
	data := zlibFixture(t)
	f, err := NewFile(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	s := f.elf.Section(".debug_info")
	if s == nil || s.Flags&elf.SHF_COMPRESSED == 0 || f.elf.Class != elf.ELFCLASS64 {
		t.Fatal("no compressed .debug_info in a 64-bit fixture")
	}
	size := s.Size

	// ch_size (Elf64_Chdr: type, reserved, size) doubled.
	claims := bytes.Clone(data)
	f.elf.ByteOrder.PutUint64(claims[s.Offset+8:], 2*size)
	g, err := NewFile(bytes.NewReader(claims))
	if err != nil {
		t.Fatal(err)
	}
	got, err := g.sectionBytes(g.elf.Section(".debug_info"))
	if !errors.Is(err, io.ErrUnexpectedEOF) || uint64(len(got)) != size {
		t.Errorf("size claimed twice: %d bytes, %v; want the %d the stream holds and io.ErrUnexpectedEOF", len(got), err, size)
	}

	// The middle of the deflate stream overwritten.
	broken := bytes.Clone(data)
	mid := s.Offset + 24 + (s.FileSize-24)/2
	for i := range uint64(16) {
		broken[mid+i] ^= 0xa5
	}
	h, err := NewFile(bytes.NewReader(broken))
	if err != nil {
		t.Fatal(err)
	}
	if got, err := h.sectionBytes(h.elf.Section(".debug_info")); err == nil {
		t.Errorf("damaged stream: %d bytes and no error", len(got))
	}
}
