package symbol

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"io"
	"path"
)

// maxNoteSize bounds a note section or segment read in search of the
// build-id; real ones are a few hundred bytes.
const maxNoteSize = 1 << 20

// maxBuildIDSize bounds the build-id itself; GNU ld writes 20 bytes (SHA-1),
// some linkers 16 or 32.
const maxBuildIDSize = 64

// ntGNUBuildID is the note type of the GNU build-id.
const ntGNUBuildID = 3

// ErrNoBuildID is returned by [ReadBuildID] for an ELF file without a GNU
// build-id note.
var ErrNoBuildID = errors.New("no NT_GNU_BUILD_ID note")

// ReadBuildID returns the GNU build-id of the ELF file r, as
// [File.BuildID] reads it: the one build-id reader of nsprof, used to
// name a file's debug files and to check that a file found by path is the
// one a process maps. It reads only r. A file without the note gives
// [ErrNoBuildID].
func ReadBuildID(r io.ReaderAt) ([]byte, error) {
	f, err := NewFile(r)
	if err != nil {
		return nil, err
	}
	if f.buildID == nil {
		return nil, ErrNoBuildID
	}
	return f.buildID, nil
}

// readBuildID finds the NT_GNU_BUILD_ID note, in the note sections first
// (a separate debug file keeps them while its segments point at nothing),
// then in the PT_NOTE segments (a file without section headers).
func (f *File) readBuildID() []byte {
	for _, s := range f.elf.Sections {
		if s.Type != elf.SHT_NOTE {
			continue
		}
		data, err := f.sectionData(s, maxNoteSize)
		if err != nil {
			continue
		}
		if id := FindBuildIDNote(data, f.elf.ByteOrder, s.Addralign); id != nil {
			return id
		}
	}
	for _, p := range f.elf.Progs {
		if p.Type != elf.PT_NOTE || p.Filesz > maxNoteSize || p.Off > uint64(f.size) || p.Filesz > uint64(f.size)-p.Off {
			continue
		}
		data := make([]byte, p.Filesz)
		if _, err := f.r.ReadAt(data, int64(p.Off)); err != nil && err != io.EOF {
			continue
		}
		if id := FindBuildIDNote(data, f.elf.ByteOrder, p.Align); id != nil {
			return id
		}
	}
	return nil
}

// FindBuildIDNote walks the ELF notes in data, the contents of a note
// section or segment aligned to align bytes, and returns a copy of the
// descriptor of the GNU build-id (type NT_GNU_BUILD_ID, name "GNU"), or
// nil. Each note is a 12-byte header (namesz, descsz, type) followed by
// the name and the descriptor, each starting at an offset from the note's
// start rounded up to the alignment: 8 in 8-aligned notes
// (.note.gnu.property, and whatever a linker puts with it), 4 otherwise,
// as binutils' readelf reads them. A descriptor over 64 bytes is not a
// build-id. It does no I/O.
func FindBuildIDNote(data []byte, bo binary.ByteOrder, align uint64) []byte {
	return findNote(data, bo, align, "GNU\x00", ntGNUBuildID, maxBuildIDSize)
}

// ntGoBuildID is the type of the Go toolchain's build-id note.
const ntGoBuildID = 4

// maxGoBuildIDSize bounds a Go build-id: four base64 hashes joined by
// slashes, 83 bytes today.
const maxGoBuildIDSize = 256

// GoBuildID returns the Go toolchain's build-id (as `go tool buildid`
// prints it), from the .note.go.buildid section, or nil if the file has
// none. A Go binary whose GNU build-id note lies outside its PT_NOTE
// segment (as Go's linker places it) still has this one.
func (f *File) GoBuildID() []byte {
	s := f.elf.Section(".note.go.buildid")
	if s == nil || s.Type != elf.SHT_NOTE {
		return nil
	}
	data, err := f.sectionData(s, maxNoteSize)
	if err != nil {
		return nil
	}
	return findNote(data, f.elf.ByteOrder, s.Addralign, "Go\x00\x00", ntGoBuildID, maxGoBuildIDSize)
}

// findNote returns the descriptor of the first note named name (with its
// NUL padding) of type typ in data, notes aligned to align bytes, or nil.
func findNote(data []byte, bo binary.ByteOrder, align uint64, want string, wantType uint32, maxDesc int) []byte {
	a := uint64(4)
	if align == 8 {
		a = 8
	}
	up := func(n uint64) uint64 { return (n + a - 1) &^ (a - 1) }
	for len(data) >= 12 {
		namesz := uint64(bo.Uint32(data[0:]))
		descsz := uint64(bo.Uint32(data[4:]))
		typ := bo.Uint32(data[8:])
		descOff := up(12 + namesz)
		next := up(descOff + descsz)
		if descOff > uint64(len(data)) || descOff+descsz > uint64(len(data)) {
			return nil
		}
		name := data[12 : 12+namesz]
		desc := data[descOff : descOff+descsz]
		if typ == wantType && string(name) == want && len(desc) > 0 && len(desc) <= maxDesc {
			return bytes.Clone(desc)
		}
		if next > uint64(len(data)) {
			return nil
		}
		data = data[next:]
	}
	return nil
}

// buildIDPath returns where a debug directory keeps the debug file of a
// build-id: dir/.build-id/xx/rest.debug. It returns "" for an id too
// short to split.
func buildIDPath(dir string, id []byte) string {
	if len(id) < 2 {
		return ""
	}
	h := hex.EncodeToString(id)
	return path.Join(dir, ".build-id", h[:2], h[2:]+".debug")
}

func align4(n uint64) uint64 { return (n + 3) &^ 3 }
