package symbol

import (
	"bytes"
	"debug/elf"
	"strings"
)

// maxSymtabSize bounds a symbol table or its string table read from a
// file; the largest libraries' are tens of MiB.
const maxSymtabSize = 1 << 30

// Sizes of an ELF symbol table entry.
const (
	sym32Size = 16
	sym64Size = 24
)

// symtab reads the function symbols of the symbol table of type t
// (SHT_SYMTAB or SHT_DYNSYM). It reads the table itself rather than
// through debug/elf's Symbols, which makes a string and an elf.Symbol for
// every symbol, function or not (13-30 MB allocated in a recording over
// a compile loop, the Go compiler's 29 k symbols among them): here only
// functions are kept, their names copied into one string.
func (f *File) symtab(t elf.SectionType) (es []entry, err error) {
	defer recoverTo(&err, "read "+t.String())
	var sec *elf.Section
	for _, s := range f.elf.Sections {
		if s.Type == t {
			sec = s
			break
		}
	}
	if sec == nil {
		return nil, ErrNoSymbols
	}
	size := sym64Size
	if f.elf.Class == elf.ELFCLASS32 {
		size = sym32Size
	}
	data, err := f.sectionData(sec, maxSymtabSize)
	if err != nil {
		return nil, err
	}
	if len(data)%size != 0 {
		return nil, &FormatError{Off: int64(min(sec.Offset, maxFileSize)), Msg: "symbol table size not a multiple of its entry size", Val: len(data)}
	}
	if len(data) == 0 {
		return nil, ErrNoSymbols
	}
	if sec.Link == 0 || int(sec.Link) >= len(f.elf.Sections) {
		return nil, &FormatError{Off: int64(min(sec.Offset, maxFileSize)), Msg: "symbol table without a string table, link", Val: sec.Link}
	}
	strs, err := f.sectionData(f.elf.Sections[sec.Link], maxSymtabSize)
	if err != nil {
		return nil, err
	}
	var syms []rawSym
	total := 0
	for off := size; off+size <= len(data); off += size { // entry 0 is null
		s := f.rawSym(data[off:], size)
		s.nameEnd = s.nameOff
		if s.nameOff < uint64(len(strs)) {
			if n := bytes.IndexByte(strs[s.nameOff:], 0); n >= 0 {
				s.nameEnd += uint64(n)
			}
		}
		if !f.isFunc(s, strs) {
			continue
		}
		syms = append(syms, s)
		total += int(s.nameEnd - s.nameOff)
	}
	// The names, copied once, share one string.
	var b strings.Builder
	b.Grow(total)
	for _, s := range syms {
		b.Write(strs[s.nameOff:s.nameEnd])
	}
	names := b.String()
	es = make([]entry, 0, len(syms))
	at := 0
	for _, s := range syms {
		n := int(s.nameEnd - s.nameOff)
		name := names[at : at+n]
		at += n
		es = append(es, entry{Symbol: Symbol{Name: name, Addr: s.value, Size: s.size}, rank: bindingRank(s.info), ifunc: elf.ST_TYPE(s.info) == elf.STT_LOOS})
	}
	return es, nil
}

// rawSym is a symbol table entry as read, its name a range of the string
// table, empty when the name runs off its end as debug/elf has it.
type rawSym struct {
	nameOff, nameEnd uint64
	info             byte
	shndx            elf.SectionIndex
	value, size      uint64
}

// rawSym decodes the entry at the start of b, of size bytes.
func (f *File) rawSym(b []byte, size int) rawSym {
	bo := f.elf.ByteOrder
	if size == sym32Size {
		return rawSym{nameOff: uint64(bo.Uint32(b)), value: uint64(bo.Uint32(b[4:])), size: uint64(bo.Uint32(b[8:])), info: b[12], shndx: elf.SectionIndex(bo.Uint16(b[14:]))}
	}
	return rawSym{nameOff: uint64(bo.Uint32(b)), info: b[4], shndx: elf.SectionIndex(bo.Uint16(b[6:])), value: bo.Uint64(b[8:]), size: bo.Uint64(b[16:])}
}

// isFunc reports whether s, its name in strs, names code: a function, an
// indirect function, or an untyped symbol defined in an executable
// section (assembly).
func (f *File) isFunc(s rawSym, strs []byte) bool {
	if s.shndx == elf.SHN_UNDEF || s.shndx >= elf.SHN_LORESERVE || s.value == 0 || s.nameEnd == s.nameOff {
		return false
	}
	switch elf.ST_TYPE(s.info) {
	case elf.STT_FUNC, elf.STT_LOOS: // STT_LOOS is STT_GNU_IFUNC
		return true
	case elf.STT_NOTYPE:
		if c := strs[s.nameOff]; c == '$' || c == '.' { // ARM mapping symbols, local labels
			return false
		}
		i := int(s.shndx)
		return i < len(f.elf.Sections) && f.elf.Sections[i].Flags&elf.SHF_EXECINSTR != 0
	}
	return false
}
