package symbol

import (
	"bytes"
	"compress/zlib"
	"debug/dwarf"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
)

// dwarfSections are the sections line tables and inline chains need, by
// the suffix after ".debug_". Location lists, call frames, address
// ranges by unit and type units are left out: debug/elf's DWARF reads
// (and inflates) them all, and in libc's debug file they are a sixth of
// the data.
var dwarfSections = map[string]bool{
	"abbrev": true, "info": true, "str": true, "line": true, "ranges": true,
	"addr": true, "line_str": true, "str_offsets": true, "rnglists": true,
}

// readDWARF returns f's DWARF, reading only dwarfSections, each in its
// own goroutine: inflating compressed sections is most of the time it
// takes to load a large debug file, and recordings load them at their
// end, while the user waits. Relocatable objects and old-style .zdebug
// sections go through debug/elf, which handles them.
func (f *File) readDWARF() (*dwarf.Data, error) {
	type section struct {
		s   *elf.Section
		b   []byte
		err error
	}
	var want []*section
	for _, s := range f.elf.Sections {
		if strings.HasPrefix(s.Name, ".zdebug_") || f.elf.Type == elf.ET_REL {
			line, err := f.lineSection()
			if err != nil {
				return nil, err
			}
			d, err := f.elf.DWARF()
			return withLines(d, line), err
		}
		if name, ok := strings.CutPrefix(s.Name, ".debug_"); ok && dwarfSections[name] {
			want = append(want, &section{s: s})
		}
	}
	var wg sync.WaitGroup
	for _, w := range want {
		wg.Go(func() {
			defer recoverTo(&w.err, "read section "+w.s.Name)
			w.b, w.err = f.sectionBytes(w.s)
		})
	}
	wg.Wait()
	dat := map[string][]byte{}
	for _, w := range want {
		if w.err != nil && uint64(len(w.b)) < w.s.Size {
			return nil, &FormatError{Off: int64(min(w.s.Offset, maxFileSize)), Msg: "section " + w.s.Name + ": " + w.err.Error()}
		}
		dat[strings.TrimPrefix(w.s.Name, ".debug_")] = w.b
	}
	return newDWARF(dat, dat["info"])
}

// newDWARF makes DWARF data of the sections in sec (by the suffix after
// ".debug_") with info as .debug_info.
func newDWARF(sec map[string][]byte, info []byte) (*dwarf.Data, error) {
	line := sec["line"]
	d, err := dwarf.New(sec["abbrev"], nil, nil, info, line, nil, sec["ranges"], sec["str"])
	if err != nil {
		return nil, err
	}
	for _, name := range []string{"addr", "line_str", "str_offsets", "rnglists"} {
		if b := sec[name]; b != nil {
			if err := d.AddSection(".debug_"+name, b); err != nil {
				return nil, err
			}
		}
	}
	return withLines(d, line), nil
}

// lineSection returns the line tables of a file whose DWARF debug/elf
// reads itself (relocatable objects, old-style .zdebug_ sections), for
// [safeLineReader] to check: relocations do not touch their headers.
func (f *File) lineSection() ([]byte, error) {
	if s := f.elf.Section(".debug_line"); s != nil && s.Type != elf.SHT_NOBITS {
		return f.sectionData(s, maxDWARFSize)
	}
	if s := f.elf.Section(".zdebug_line"); s != nil && s.Type != elf.SHT_NOBITS {
		b, err := f.sectionData(s, maxDWARFSize)
		if err != nil {
			return nil, err
		}
		line, err := inflateZdebug(b)
		if err != nil {
			return nil, &FormatError{Off: int64(min(s.Offset, maxFileSize)), Msg: "section .zdebug_line: " + err.Error()}
		}
		return line, nil
	}
	return nil, nil
}

// inflateZdebug returns the contents of an old-style compressed section:
// "ZLIB", the size (8 bytes, big-endian), then a zlib stream; at most
// the size it declares, and at most maxDWARFSize.
func inflateZdebug(b []byte) ([]byte, error) {
	if len(b) < 12 || string(b[:4]) != "ZLIB" {
		return nil, errors.New("not a ZLIB section")
	}
	size := binary.BigEndian.Uint64(b[4:12])
	if size > maxDWARFSize {
		return nil, fmt.Errorf("declares %d bytes", size)
	}
	zr, err := zlib.NewReader(bytes.NewReader(b[12:]))
	if err != nil {
		return nil, err
	}
	return io.ReadAll(io.LimitReader(zr, int64(size)))
}
