package symbol

import (
	"debug/elf"
	"errors"
	"slices"
)

// Funcs returns the function symbols of the file whose names match, from
// its .symtab and its .dynsym, every alias included (a [Table] keeps one
// name per address), sorted by name then address, each name once. It is
// what user probes are placed by: a name is a function's entry. It
// returns an error wrapping [ErrNoSymbols] when the file has neither
// table.
func (f *File) Funcs(match func(name string) bool) (syms []Symbol, err error) {
	defer recoverTo(&err, "read function symbols")
	var tables int
	var errs []error
	for _, t := range []elf.SectionType{elf.SHT_SYMTAB, elf.SHT_DYNSYM} {
		es, err := f.symtab(t)
		if errors.Is(err, ErrNoSymbols) {
			continue
		}
		tables++
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, e := range es {
			if !e.ifunc && match(e.Name) {
				syms = append(syms, e.Symbol)
			}
		}
	}
	if tables == 0 {
		return nil, ErrNoSymbols
	}
	if len(syms) == 0 && len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	slices.SortFunc(syms, func(a, b Symbol) int {
		if a.Name != b.Name {
			if a.Name < b.Name {
				return -1
			}
			return 1
		}
		return int(min(max(int64(a.Addr)-int64(b.Addr), -1), 1))
	})
	return slices.CompactFunc(syms, func(a, b Symbol) bool { return a.Name == b.Name }), nil
}

// FileOffset converts a link-time virtual address of code to the file
// offset it is loaded from, through the executable PT_LOAD segment that
// holds it: the inverse of [File.Vaddr]. ok is false when no executable
// segment loads the address from the file.
func (f *File) FileOffset(vaddr uint64) (uint64, bool) {
	for _, p := range f.elf.Progs {
		if p.Type != elf.PT_LOAD || p.Flags&elf.PF_X == 0 {
			continue
		}
		if vaddr >= p.Vaddr && vaddr-p.Vaddr < p.Filesz {
			return vaddr - p.Vaddr + p.Off, true
		}
	}
	return 0, false
}
