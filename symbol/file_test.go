package symbol

import (
	"bytes"
	"debug/elf"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestFileUnstripped(t *testing.T) {
	lib := fixtureLib(t, t.TempDir())
	f := openFile(t, lib)
	tab, err := f.Symbols()
	if err != nil {
		t.Fatal(err)
	}
	if f.symsFrom != "symtab" {
		t.Errorf("symbols from %q, want symtab", f.symsFrom)
	}
	wantNames(t, tab, symAddrs(t, lib), all, nil)
}

func TestFileStripped(t *testing.T) {
	dir := t.TempDir()
	lib := fixtureLib(t, dir)
	s := stripAll(t, lib, filepath.Join(dir, "stripped.so"))
	f := openFile(t, s)
	tab, err := f.Symbols()
	if err != nil {
		t.Fatal(err)
	}
	if f.symsFrom != "dynsym" {
		t.Errorf("symbols from %q, want dynsym", f.symsFrom)
	}
	// The exported functions are in .dynsym; the static one is gone, and
	// its address must not be named after it.
	wantNames(t, tab, symAddrs(t, lib), exported, []string{"fixture_static"})
}

func TestBuildID(t *testing.T) {
	dir := t.TempDir()
	lib := fixtureLib(t, dir)
	out := run(t, "readelf", "-n", lib)
	i := strings.Index(out, "Build ID: ")
	if i < 0 {
		t.Fatalf("readelf -n shows no build-id:\n%s", out)
	}
	want := strings.Fields(out[i+len("Build ID: "):])[0]
	if got := hex.EncodeToString(openFile(t, lib).BuildID()); got != want {
		t.Errorf("BuildID = %s, readelf says %s", got, want)
	}
	// The separate debug file keeps the note.
	dbg := keepDebug(t, lib, filepath.Join(dir, "lib.debug"))
	if got := hex.EncodeToString(openFile(t, dbg).BuildID()); got != want {
		t.Errorf("debug file BuildID = %s, want %s", got, want)
	}
}

func TestDebugLink(t *testing.T) {
	dir := t.TempDir()
	lib := fixtureLib(t, dir)
	s := stripAll(t, lib, filepath.Join(dir, "stripped.so"))
	if _, _, ok := openFile(t, s).DebugLink(); ok {
		t.Fatal("DebugLink ok before objcopy added one")
	}
	dbg := keepDebug(t, lib, filepath.Join(dir, "fixture.debug"))
	addDebugLink(t, s, dbg)
	name, crc, ok := openFile(t, s).DebugLink()
	if !ok || name != "fixture.debug" {
		t.Fatalf("DebugLink = %q, %#x, %v; want fixture.debug", name, crc, ok)
	}
	df, err := os.Open(dbg)
	if err != nil {
		t.Fatal(err)
	}
	defer df.Close()
	want, err := DebugLinkCRC(df)
	if err != nil {
		t.Fatal(err)
	}
	if crc != want {
		t.Errorf("CRC %#x, computed %#x", crc, want)
	}
}

func TestVaddr(t *testing.T) {
	lib := fixtureLib(t, t.TempDir())
	ef, err := elf.Open(lib)
	if err != nil {
		t.Fatal(err)
	}
	defer ef.Close()
	text := ef.Section(".text")
	f := openFile(t, lib)
	v, ok := f.Vaddr(text.Offset + 5)
	if !ok || v != text.Addr+5 {
		t.Errorf("Vaddr(.text offset+5) = %#x, %v; want %#x", v, ok, text.Addr+5)
	}
	if _, ok := f.Vaddr(1 << 40); ok {
		t.Error("Vaddr beyond the file is ok")
	}
}

func TestNewFileHostile(t *testing.T) {
	lib := fixtureLib(t, t.TempDir())
	good, err := os.ReadFile(lib)
	if err != nil {
		t.Fatal(err)
	}
	// A truncated file: sections beyond its end must be refused, not
	// read, and nothing may panic.
	for _, n := range []int{0, 16, 64, 1000, len(good) / 2, len(good) - 100} {
		f, err := NewFile(bytes.NewReader(good[:n]))
		if err != nil {
			if f != nil {
				t.Errorf("truncated to %d: error with a non-nil File", n)
			}
			continue
		}
		f.Symbols()
		f.BuildID()
		f.DebugLink()
	}
	// A .symtab claiming a huge size.
	ef, _ := elf.NewFile(bytes.NewReader(good))
	st := ef.Section(".symtab")
	bad := bytes.Clone(good)
	idx := -1
	for i, s := range ef.Sections {
		if s == st {
			idx = i
		}
	}
	hdr := readShoff(good)
	off := hdr + uint64(idx)*64 + 32 // sh_size of a 64-bit section header
	for i := range 8 {
		bad[off+uint64(i)] = 0x7f
	}
	f, err := NewFile(bytes.NewReader(bad))
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.symtab(elf.SHT_SYMTAB)
	if _, ok := errors.AsType[*FormatError](err); !ok {
		t.Errorf("reading a huge .symtab: %v, want a *FormatError", err)
	}
	// Symbols falls back to .dynsym.
	if tab, err := f.Symbols(); err != nil || f.symsFrom != "dynsym" {
		t.Errorf("Symbols = %d symbols from %q, %v; want .dynsym's", tab.Len(), f.symsFrom, err)
	}
}

// readShoff returns e_shoff of a 64-bit little-endian ELF header.
func readShoff(b []byte) uint64 {
	var v uint64
	for i := 7; i >= 0; i-- {
		v = v<<8 | uint64(b[0x28+i])
	}
	return v
}

func TestReaderSize(t *testing.T) {
	for _, n := range []int{0, 1, 2, 3, 1000, 4096, 12345} {
		r := struct{ *bytes.Reader }{bytes.NewReader(make([]byte, n))} // hides Size
		var ra interface {
			ReadAt([]byte, int64) (int, error)
		} = readerAtOnly{r.Reader}
		if got := readerSize(ra); got != int64(n) {
			t.Errorf("readerSize(%d bytes) = %d", n, got)
		}
	}
}

type readerAtOnly struct{ r *bytes.Reader }

func (r readerAtOnly) ReadAt(p []byte, off int64) (int, error) { return r.r.ReadAt(p, off) }
