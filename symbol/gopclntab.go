package symbol

import (
	"debug/elf"
	"debug/gosym"
	"encoding/binary"
	"errors"
)

// maxPclntabSize bounds the Go line table; the largest Go binaries have a
// few hundred MiB.
const maxPclntabSize = 1 << 30

// goFuncs reads the functions of a Go binary from its .gopclntab, which
// the Go linker writes even into binaries stripped with -ldflags=-s -w.
func (f *File) goFuncs() (es []entry, err error) {
	defer recoverTo(&err, "read .gopclntab")
	data, off, err := f.pclntab()
	if err != nil || data == nil {
		if err == nil {
			err = ErrNoSymbols
		}
		return nil, err
	}
	var textStart uint64
	if t := f.elf.Section(".text"); t != nil {
		textStart = t.Addr
	}
	lt := gosym.NewLineTable(data, textStart)
	tab, err := gosym.NewTable(nil, lt)
	if err != nil {
		return nil, &FormatError{Off: off, Msg: "gopclntab: " + err.Error()}
	}
	es = make([]entry, 0, len(tab.Funcs))
	for _, fn := range tab.Funcs {
		if fn.Entry == 0 || fn.End < fn.Entry || fn.Sym == nil || fn.Name == "" {
			continue
		}
		es = append(es, entry{Symbol: Symbol{Name: fn.Name, Addr: fn.Entry, Size: fn.End - fn.Entry}, rank: rankGlobal})
	}
	if len(es) == 0 {
		return nil, ErrNoSymbols
	}
	return es, nil
}

// pclntab returns the contents of the Go line table and its file offset.
// It is the .gopclntab section, or .data.rel.ro.gopclntab (PIE builds of
// Go 1.25 and before), or, in binaries where the linker put it in
// .data.rel.ro (older PIE builds), found there by its header.
func (f *File) pclntab() ([]byte, int64, error) {
	s, search := f.pclntabSection()
	if s == nil {
		return nil, 0, nil
	}
	data, err := f.sectionData(s, maxPclntabSize)
	if err != nil || !search {
		return data, int64(min(s.Offset, maxFileSize)), err
	}
	i := findPclntabHeader(data, f.elf.ByteOrder)
	if i < 0 {
		return nil, 0, errors.New("Go binary without a pclntab")
	}
	return data[i:], int64(s.Offset) + int64(i), nil
}

// pclntabSection returns the section holding the Go line table, and
// whether the table must be searched for in it.
func (f *File) pclntabSection() (s *elf.Section, search bool) {
	for _, name := range []string{".gopclntab", ".data.rel.ro.gopclntab"} {
		if s := f.elf.Section(name); s != nil && s.Type != elf.SHT_NOBITS {
			return s, false
		}
	}
	if s := f.elf.Section(".data.rel.ro"); s != nil && s.Type != elf.SHT_NOBITS && f.isGo() {
		return s, true
	}
	return nil, false
}

// isGo reports whether the file was built by the Go linker: it has a
// .go.buildinfo or .note.go.buildid section.
func (f *File) isGo() bool {
	return f.elf.Section(".go.buildinfo") != nil || f.elf.Section(".note.go.buildid") != nil
}

// findPclntabHeader returns the offset of a pclntab header in data: a magic
// of Go 1.16 or later, two zero bytes, the instruction size quantum (1, 2
// or 4) and the pointer size (4 or 8), aligned to 8 bytes.
func findPclntabHeader(data []byte, bo binary.ByteOrder) int {
	for i := 0; i+8 <= len(data); i += 8 {
		switch bo.Uint32(data[i:]) {
		case 0xfffffff1, 0xfffffff0, 0xfffffffa: // Go 1.20, 1.18, 1.16
		default:
			continue
		}
		if data[i+4] != 0 || data[i+5] != 0 {
			continue
		}
		if q := data[i+6]; q != 1 && q != 2 && q != 4 {
			continue
		}
		if p := data[i+7]; p != 4 && p != 8 {
			continue
		}
		return i
	}
	return -1
}
