package container

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// maxNoteSize bounds a note segment or section read for the build-id.
const maxNoteSize = 1 << 20

// ntGNUBuildID is the note type of a GNU build-id.
const ntGNUBuildID = 3

var errNoBuildID = errors.New("no NT_GNU_BUILD_ID note")

// elfBuildID returns the GNU build-id of the ELF file r. debug/elf panics on
// some corrupt files; those become errors.
func elfBuildID(r io.ReaderAt) (id []byte, err error) {
	defer func() {
		if p := recover(); p != nil {
			id, err = nil, fmt.Errorf("reading ELF: %v", p)
		}
	}()
	f, err := elf.NewFile(r)
	if err != nil {
		return nil, err
	}
	for _, p := range f.Progs {
		if p.Type != elf.PT_NOTE || p.Filesz > maxNoteSize {
			continue
		}
		data := make([]byte, p.Filesz)
		if _, err := p.ReadAt(data, 0); err != nil {
			continue
		}
		if id := findBuildIDNote(data, f.ByteOrder, p.Align); id != nil {
			return id, nil
		}
	}
	for _, s := range f.Sections {
		if s.Type != elf.SHT_NOTE || s.Size > maxNoteSize {
			continue
		}
		data, err := s.Data()
		if err != nil {
			continue
		}
		if id := findBuildIDNote(data, f.ByteOrder, s.Addralign); id != nil {
			return id, nil
		}
	}
	return nil, errNoBuildID
}

// findBuildIDNote scans ELF notes for NT_GNU_BUILD_ID with name "GNU".
func findBuildIDNote(data []byte, bo binary.ByteOrder, align uint64) []byte {
	a := 4
	if align == 8 {
		a = 8
	}
	pad := func(n uint64) uint64 { return (n + uint64(a) - 1) &^ uint64(a-1) }
	for len(data) >= 12 {
		namesz, descsz, typ := uint64(bo.Uint32(data)), uint64(bo.Uint32(data[4:])), bo.Uint32(data[8:])
		data = data[12:]
		nlen := pad(namesz)
		if nlen > uint64(len(data)) {
			return nil
		}
		name := data[:namesz]
		data = data[nlen:]
		dlen := pad(descsz)
		if descsz > uint64(len(data)) {
			return nil
		}
		desc := data[:descsz]
		if dlen > uint64(len(data)) {
			dlen = uint64(len(data))
		}
		data = data[dlen:]
		if typ == ntGNUBuildID && bytes.Equal(name, []byte("GNU\x00")) && descsz > 0 {
			return bytes.Clone(desc)
		}
	}
	return nil
}
