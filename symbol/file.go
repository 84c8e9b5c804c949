package symbol

import (
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sync"
)

// maxFileSize bounds the size of an object file when the reader cannot
// tell it: no section of a larger file is read.
const maxFileSize = 1 << 40

// File is one opened ELF object: an executable, a shared library or a
// separate debug file. Its methods may be called concurrently, but not
// concurrently with Close.
type File struct {
	elf    *elf.File
	r      io.ReaderAt
	size   int64
	closer io.Closer

	buildID []byte

	symsOnce sync.Once
	syms     *Table
	symsErr  error
	// symsFrom says what Symbols read: "symtab", "dynsym", "minidebuginfo",
	// "gopclntab", or several joined with "+"; "plt" when the PLT
	// entries are all the file names.
	symsFrom string
}

// NewFile parses the ELF headers read from r. It never panics: panics of
// debug/elf on hostile input are returned as errors. Sizes read from the
// file are bounded by the size of r, taken from a Size or Stat method when
// r has one and probed otherwise. Close does not close r.
func NewFile(r io.ReaderAt) (f *File, err error) {
	defer func() {
		if err != nil {
			f = nil
		}
	}()
	defer recoverTo(&err, "parse ELF")
	size := readerSize(r)
	ef, err := elf.NewFile(r)
	if err != nil {
		return nil, fmt.Errorf("parse ELF: %w", err)
	}
	f = &File{elf: ef, r: r, size: size}
	f.buildID = f.readBuildID()
	return f, nil
}

// Open opens the ELF file at path on the host (with [OpenRegular], which
// does not wait on a FIFO). Close closes it.
func Open(path string) (*File, error) {
	osf, err := OpenRegular(path)
	if err != nil {
		return nil, err
	}
	f, err := NewFile(osf)
	if err != nil {
		osf.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	f.closer = osf
	return f, nil
}

// Close releases the file opened by [Open]; for a File made by [NewFile] it
// does nothing. Close is idempotent.
func (f *File) Close() error {
	if f == nil || f.closer == nil {
		return nil
	}
	c := f.closer
	f.closer = nil
	return c.Close()
}

// BuildID returns the GNU build-id (the NT_GNU_BUILD_ID note), or nil if
// the file has none. The slice must not be modified.
func (f *File) BuildID() []byte { return f.buildID }

// Vaddr converts a file offset to the link-time virtual address it is
// loaded at, through the PT_LOAD segments. A sampled address addr in a
// mapping that starts at mapStart with file offset mapOffset is at
// Vaddr(addr - mapStart + mapOffset). ok is false when no segment loads
// that offset from the file.
func (f *File) Vaddr(fileOffset uint64) (uint64, bool) {
	for _, p := range f.elf.Progs {
		if p.Type != elf.PT_LOAD {
			continue
		}
		if fileOffset >= p.Off && fileOffset-p.Off < p.Filesz {
			return p.Vaddr + (fileOffset - p.Off), true
		}
	}
	return 0, false
}

// Symbols returns the function symbols of the file: its .symtab when it has
// one; otherwise its .dynsym, merged with the .symtab of the MiniDebugInfo
// in .gnu_debugdata and with the functions of Go's .gopclntab. On x86-64
// the entries of its PLT are added as NAME@plt. The table is read once and
// shared by later calls. It returns an error wrapping [ErrNoSymbols] when
// there are none.
func (f *File) Symbols() (*Table, error) {
	f.symsOnce.Do(func() {
		f.syms, f.symsFrom, f.symsErr = f.readSymbols()
	})
	return f.syms, f.symsErr
}

// readSymbols implements Symbols.
func (f *File) readSymbols() (*Table, string, error) {
	var es []entry
	var from []string
	var errs []error
	add := func(what string, e []entry, err error) {
		if err != nil && !errors.Is(err, ErrNoSymbols) {
			errs = append(errs, fmt.Errorf("%s: %w", what, err))
		}
		if len(e) > 0 {
			es = append(es, e...)
			from = append(from, what)
		}
	}
	if f.hasSection(elf.SHT_SYMTAB) {
		e, err := f.symtab(elf.SHT_SYMTAB)
		add("symtab", e, err)
	}
	if len(es) == 0 {
		e, err := f.symtab(elf.SHT_DYNSYM)
		add("dynsym", e, err)
		e, err = f.miniDebugInfo()
		add("minidebuginfo", e, err)
		e, err = f.goFuncs()
		add("gopclntab", e, err)
	}
	if plt := f.pltSymbols(es); len(plt) > 0 {
		if len(es) == 0 {
			from = append(from, "plt")
		}
		es = append(es, plt...)
	}
	if len(es) == 0 {
		errs = append(errs, ErrNoSymbols)
		return nil, "", errors.Join(errs...)
	}
	src := from[0]
	for _, s := range from[1:] {
		src += "+" + s
	}
	// Symbols were read; errors of other sources do not matter.
	return buildTable(es, f.bounds()), src, nil
}

func (f *File) hasSection(t elf.SectionType) bool {
	for _, s := range f.elf.Sections {
		if s.Type == t {
			return true
		}
	}
	return false
}

// hasDebugInfo reports whether the file carries DWARF line tables, in
// .debug_line or in the old-style compressed .zdebug_line (Go before 1.24
// wrote those; debug/elf reads them).
func (f *File) hasDebugInfo() bool {
	for _, name := range []string{".debug_line", ".zdebug_line"} {
		if s := f.elf.Section(name); s != nil && s.Type != elf.SHT_NOBITS {
			return true
		}
	}
	return false
}

// section returns the contents of the named section, refusing sections
// that lie beyond the end of the file or would decompress to more than
// limit bytes. It returns nil, nil when the section is absent or NOBITS.
func (f *File) section(name string, limit int64) ([]byte, error) {
	s := f.elf.Section(name)
	if s == nil || s.Type == elf.SHT_NOBITS {
		return nil, nil
	}
	return f.sectionData(s, limit)
}

// sectionData reads s, bounded as section describes.
func (f *File) sectionData(s *elf.Section, limit int64) (data []byte, err error) {
	defer recoverTo(&err, "read section "+s.Name)
	if _, err := f.checkBounds(s); err != nil {
		return nil, err
	}
	if s.Size > uint64(limit) {
		return nil, &FormatError{Off: int64(min(s.Offset, uint64(maxFileSize))), Msg: "section " + s.Name + " too large", Val: s.Size}
	}
	return f.sectionBytes(s)
}

// bounds returns the address ranges of the allocated sections, sorted, as
// the limits of zero-size symbols.
func (f *File) bounds() []addrRange {
	var rs []addrRange
	for _, s := range f.elf.Sections {
		if s.Flags&elf.SHF_ALLOC == 0 || s.Size == 0 || s.Addr+s.Size < s.Addr {
			continue
		}
		rs = append(rs, addrRange{s.Addr, s.Addr + s.Size})
	}
	slices.SortFunc(rs, func(a, b addrRange) int {
		if a.start != b.start {
			if a.start < b.start {
				return -1
			}
			return 1
		}
		return 0
	})
	// Drop overlaps (TLS sections share addresses with others) so that
	// the ranges stay searchable by binary search.
	out := rs[:0]
	for _, r := range rs {
		if len(out) > 0 && r.start < out[len(out)-1].end {
			continue
		}
		out = append(out, r)
	}
	return out
}

// checkBounds refuses a section whose file contents lie beyond the end of
// the file, or that claims to decompress to much more than it holds.
func (f *File) checkBounds(s *elf.Section) (*elf.Section, error) {
	if s.Type == elf.SHT_NOBITS {
		return s, nil
	}
	if s.Offset > uint64(f.size) || s.FileSize > uint64(f.size)-s.Offset {
		return nil, &FormatError{Off: int64(min(s.Offset, uint64(maxFileSize))), Msg: "section " + s.Name + " extends beyond the end of the file, size", Val: s.FileSize}
	}
	if s.Flags&elf.SHF_COMPRESSED != 0 && s.Size/64 > s.FileSize+64 {
		return nil, &FormatError{Off: int64(min(s.Offset, uint64(maxFileSize))), Msg: "section " + s.Name + " decompresses to an implausible size", Val: s.Size}
	}
	return s, nil
}

// readerSize returns the size of r: from a Size or Stat method, or by
// probing with ReadAt, capped at maxFileSize.
func readerSize(r io.ReaderAt) int64 {
	switch v := r.(type) {
	case interface{ Size() int64 }:
		return v.Size()
	case interface{ Stat() (os.FileInfo, error) }:
		if fi, err := v.Stat(); err == nil && fi.Mode().IsRegular() {
			return fi.Size()
		}
	}
	var b [1]byte
	has := func(off int64) bool { n, _ := r.ReadAt(b[:], off); return n == 1 }
	if !has(0) {
		return 0
	}
	lo, hi := int64(0), int64(1) // has(lo); find hi with !has(hi)
	for has(hi) {
		lo = hi
		if hi >= maxFileSize {
			return maxFileSize
		}
		hi *= 2
	}
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		if has(mid) {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo + 1
}

// recoverTo turns a panic into an error in *err; debug/elf, debug/dwarf and
// debug/gosym may panic on malformed input.
func recoverTo(err *error, what string) {
	if r := recover(); r != nil {
		*err = fmt.Errorf("%s: malformed input: %v", what, r)
	}
}
