package container

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"

	"nsprof/internal/testutils"
	"nsprof/symbol"
)

// noteELF returns a minimal ELF64 executable without section headers
// whose one PT_NOTE segment, aligned to 8 bytes as .note.gnu.property is,
// holds a GNU property note with a descriptor of propSize bytes and then
// the build-id note of id.
func noteELF(propSize int, id []byte) []byte {
	le := binary.LittleEndian
	up8 := func(n int) int { return (n + 7) &^ 7 }
	var notes []byte
	note := func(typ uint32, desc []byte) {
		h := make([]byte, 16)
		le.PutUint32(h[0:], 4)
		le.PutUint32(h[4:], uint32(len(desc)))
		le.PutUint32(h[8:], typ)
		copy(h[12:], "GNU\x00")
		n := append(h, desc...)
		notes = append(notes, append(n, make([]byte, up8(len(n))-len(n))...)...)
	}
	note(5, make([]byte, propSize)) // NT_GNU_PROPERTY_TYPE_0
	note(3, id)                     // NT_GNU_BUILD_ID

	const ehsize, phsize = 64, 56
	b := make([]byte, ehsize+phsize)
	copy(b, "\x7fELF\x02\x01\x01")
	le.PutUint16(b[16:], 2)  // ET_EXEC
	le.PutUint16(b[18:], 62) // EM_X86_64
	le.PutUint32(b[20:], 1)
	le.PutUint64(b[32:], ehsize) // e_phoff
	le.PutUint16(b[52:], ehsize)
	le.PutUint16(b[54:], phsize)
	le.PutUint16(b[56:], 1) // e_phnum
	ph := b[ehsize:]
	le.PutUint32(ph[0:], 4)                   // PT_NOTE
	le.PutUint64(ph[8:], ehsize+phsize)       // p_offset
	le.PutUint64(ph[32:], uint64(len(notes))) // p_filesz
	le.PutUint64(ph[40:], uint64(len(notes))) // p_memsz
	le.PutUint64(ph[48:], 8)                  // p_align
	return append(b, notes...)
}

// TestBuildIDAsSymbolReadsIt checks that the build-id a file is matched
// to its mapping by is the one symbol.File reads (and names its debug
// files by), on 8-aligned notes and on this machine's files.
func TestBuildIDAsSymbolReadsIt(t *testing.T) {
	id := bytes.Repeat([]byte{0xab, 0xcd, 0xef, 0x01}, 5)
	files := map[string][]byte{
		"property16": noteELF(16, id),
		"property4":  noteELF(4, id),
	}
	dir := t.TempDir()
	var paths []string
	for name, b := range files {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	for _, p := range []string{"/usr/bin/ls", "/lib/x86_64-linux-gnu/libc.so.6"} {
		if _, err := os.Stat(p); err != nil {
			testutils.RequireCI(t, "%s: %v", p, err)
			continue
		}
		paths = append(paths, p)
	}
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		sf, err := symbol.NewFile(f)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		want := sf.BuildID()
		if _, synthetic := files[filepath.Base(p)]; synthetic && !bytes.Equal(want, id) {
			t.Errorf("%s: symbol.File reads build-id %x, want %x", p, want, id)
		}
		if len(want) == 0 {
			t.Errorf("%s: symbol.File reads no build-id", p)
			continue
		}
		if err := verify(f, Mapping{Path: p, BuildID: want}, true); err != nil {
			t.Errorf("%s: the mapping check refuses the build-id symbol.File reads: %v", p, err)
		}
	}
}
