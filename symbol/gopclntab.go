package symbol

import (
	"debug/gosym"
	"errors"

	"nsprof/internal/gopclntab"
)

// maxPclntabSize bounds the Go line table; the largest Go binaries have a
// few hundred MiB.
const maxPclntabSize = 1 << 30

// goFuncs reads the functions of a Go binary from its .gopclntab, which
// the Go linker writes even into binaries stripped with -ldflags=-s -w.
// It reads them through debug/gosym rather than the Go 1.20+ reader of
// golines.go, since gosym also knows the layouts of Go 1.2 to 1.16.
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

// pclntab returns the contents of the Go line table and its file offset,
// found where [gopclntab.Section] says, as unwind finds it too.
func (f *File) pclntab() ([]byte, int64, error) {
	s, search := gopclntab.Section(f.elf)
	if s == nil {
		return nil, 0, nil
	}
	data, err := f.sectionData(s, maxPclntabSize)
	if err != nil || !search {
		return data, int64(min(s.Offset, maxFileSize)), err
	}
	i := gopclntab.FindHeader(data, f.elf.ByteOrder)
	if i < 0 {
		return nil, 0, errors.New("Go binary without a pclntab")
	}
	return data[i:], int64(s.Offset) + int64(i), nil
}
