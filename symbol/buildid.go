package symbol

import (
	"debug/elf"
	"encoding/binary"
	"encoding/hex"
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

// readBuildID finds the NT_GNU_BUILD_ID note, in the note sections first
// (a separate debug file keeps them while its segments point at nothing),
// then in the PT_NOTE segments.
func (f *File) readBuildID() []byte {
	for _, s := range f.elf.Sections {
		if s.Type != elf.SHT_NOTE {
			continue
		}
		data, err := f.sectionData(s, maxNoteSize)
		if err != nil {
			continue
		}
		if id := findBuildID(data, f.elf.ByteOrder); id != nil {
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
		if id := findBuildID(data, f.elf.ByteOrder); id != nil {
			return id
		}
	}
	return nil
}

// findBuildID walks the notes in data (namesz, descsz, type, name, desc,
// each padded to 4 bytes) and returns the descriptor of the GNU build-id.
func findBuildID(data []byte, bo binary.ByteOrder) []byte {
	for len(data) >= 12 {
		namesz := uint64(bo.Uint32(data[0:]))
		descsz := uint64(bo.Uint32(data[4:]))
		typ := bo.Uint32(data[8:])
		data = data[12:]
		nameEnd := align4(namesz)
		descEnd := nameEnd + align4(descsz)
		if nameEnd > uint64(len(data)) || descEnd > uint64(len(data)) {
			return nil
		}
		name := data[:namesz]
		desc := data[nameEnd : nameEnd+descsz]
		data = data[descEnd:]
		if typ == ntGNUBuildID && string(name) == "GNU\x00" && len(desc) > 0 && len(desc) <= maxBuildIDSize {
			return append([]byte(nil), desc...)
		}
	}
	return nil
}

func align4(n uint64) uint64 { return (n + 3) &^ 3 }

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
