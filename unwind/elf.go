package unwind

import (
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"os"
)

// ErrNoCFI is returned by [Load] for an object without call frame
// information.
var ErrNoCFI = errors.New("no call frame information")

// maxSection bounds the size of a call-frame section read from a file.
const maxSection = 256 << 20

// Load reads the call frame information of the x86-64 ELF object obj
// into a table: its .eh_frame (located through PT_GNU_EH_FRAME and
// .eh_frame_hdr when the section headers are gone) and its .debug_frame,
// then the .debug_frame of debug, a separate debug file for obj, which may
// be nil. Where both describe an address, .eh_frame wins. A non-Go
// object's .eh_frame is interpreted an FDE at a time as its addresses are
// first looked up (see lazyFDEs): an FDE of it that cannot be interpreted
// covers nothing, and no error says so. Any other FDE that cannot be
// interpreted is left out; Load then returns the table with an error
// saying so. Load never panics.
func Load(obj, debug io.ReaderAt) (t *Table, err error) {
	defer func() {
		if p := recover(); p != nil {
			t, err = nil, fmt.Errorf("parse ELF: %v", p)
		}
	}()
	f, err := elf.NewFile(obj)
	if err != nil {
		return nil, fmt.Errorf("parse ELF: %w", err)
	}
	if f.Machine != elf.EM_X86_64 || f.Class != elf.ELFCLASS64 {
		return nil, fmt.Errorf("%v %v: only x86-64 is supported", f.Class, f.Machine)
	}
	limit := sizeOf(obj)
	t = &Table{}
	for _, p := range f.Progs {
		if p.Type == elf.PT_LOAD {
			t.segs = append(t.segs, segment{off: p.Off, vaddr: p.Vaddr, filesz: p.Filesz})
		}
	}
	var fdes []fde
	var errs []error
	// A Go binary's .debug_frame (compressed, and large) says what its
	// .gopclntab says: the pclntab is read instead, ten times faster.
	isGo := f.Section(".gopclntab") != nil
	add := func(s section, ok bool, err error) {
		if err != nil {
			errs = append(errs, err)
		}
		if !ok {
			return
		}
		got, err := parseFDEs(s)
		if err != nil {
			errs = append(errs, err)
		}
		if s.eh && !isGo && lazyEHFrame {
			// Interpreted as looked up (see lazyFDEs), and first:
			// where .eh_frame describes an address, it wins. A Go
			// binary's few (cgo's C) are made into rows, which its
			// pclntab's functions are checked against.
			if t.eh = newLazyFDEs(s, got); t.eh != nil {
				t.fdes += len(t.eh.fdes)
			}
			return
		}
		fdes = append(fdes, got...)
	}
	add(ehFrame(f, limit))
	if !isGo {
		add(debugFrame(f, limit))
	}
	if debug != nil && !isGo {
		df, err := elf.NewFile(debug)
		if err != nil {
			errs = append(errs, fmt.Errorf("debug file: %w", err))
		} else {
			add(debugFrame(df, sizeOf(debug)))
		}
	}
	if len(fdes) > 0 {
		if err := t.build(fdes); err != nil {
			errs = append(errs, err)
		}
	}
	t.addGoRows(f, obj, limit)
	if len(t.rows) == 0 && t.gofuncs == nil && t.eh == nil {
		return nil, errors.Join(append([]error{ErrNoCFI}, errs...)...)
	}
	return t, errors.Join(errs...)
}

// lazyEHFrame says [Load] interprets .eh_frame as looked up (see
// lazyFDEs): false only for the tests that compare both ways.
var lazyEHFrame = true

// sizeOf returns the size of r when it can tell, else maxSection.
func sizeOf(r io.ReaderAt) uint64 {
	switch v := r.(type) {
	case interface{ Size() int64 }:
		return uint64(max(v.Size(), 0))
	case interface{ Stat() (os.FileInfo, error) }:
		if st, err := v.Stat(); err == nil && st.Mode().IsRegular() {
			return uint64(st.Size())
		}
	}
	return maxSection
}

// sectionBytes reads s, bounded by limit and maxSection.
func sectionBytes(s *elf.Section, limit uint64) ([]byte, error) {
	if s.Type == elf.SHT_NOBITS {
		return nil, nil
	}
	if s.Size > min(limit, maxSection) {
		return nil, fmt.Errorf("%s: %d bytes is too large", s.Name, s.Size)
	}
	b, err := s.Data()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", s.Name, err)
	}
	return b, nil
}

// bases returns the text and GOT addresses, the bases of textrel and
// datarel pointers.
func bases(f *elf.File) (text, got uint64) {
	if s := f.Section(".text"); s != nil {
		text = s.Addr
	}
	if s := f.Section(".got"); s != nil {
		got = s.Addr
	}
	return text, got
}

// ehFrame returns f's .eh_frame section, or finds it from the program
// headers.
func ehFrame(f *elf.File, limit uint64) (section, bool, error) {
	limit = min(limit, maxSection)
	text, got := bases(f)
	if s := f.Section(".eh_frame"); s != nil && s.Type != elf.SHT_NOBITS {
		b, err := sectionBytes(s, limit)
		return section{name: ".eh_frame", data: b, vaddr: s.Addr, eh: true, text: text, got: got}, err == nil, err
	}
	for _, p := range f.Progs {
		if p.Type != elf.PT_GNU_EH_FRAME {
			continue
		}
		hb := make([]byte, min(p.Filesz, limit))
		if _, err := p.ReadAt(hb, 0); err != nil {
			return section{}, false, fmt.Errorf("PT_GNU_EH_FRAME: %w", err)
		}
		h, err := parseHdr(hb, p.Vaddr)
		if err != nil {
			return section{}, false, err
		}
		// .eh_frame runs to its terminator, within its segment.
		for _, l := range f.Progs {
			if l.Type != elf.PT_LOAD || h.ehFrame < l.Vaddr || h.ehFrame-l.Vaddr >= l.Filesz {
				continue
			}
			n := min(l.Filesz-(h.ehFrame-l.Vaddr), limit)
			b := make([]byte, n)
			if _, err := l.ReadAt(b, int64(h.ehFrame-l.Vaddr)); err != nil && err != io.EOF {
				return section{}, false, fmt.Errorf(".eh_frame from PT_GNU_EH_FRAME: %w", err)
			}
			return section{name: ".eh_frame", data: b, vaddr: h.ehFrame, eh: true, text: text, got: got}, true, nil
		}
		return section{}, false, fmt.Errorf(".eh_frame_hdr points at %#x, outside every PT_LOAD", h.ehFrame)
	}
	return section{}, false, nil
}

// debugFrame returns f's .debug_frame section, if it has one with data.
func debugFrame(f *elf.File, limit uint64) (section, bool, error) {
	s := f.Section(".debug_frame")
	if s == nil || s.Type == elf.SHT_NOBITS {
		return section{}, false, nil
	}
	b, err := sectionBytes(s, limit)
	return section{name: ".debug_frame", data: b}, err == nil, err
}
