package symbol

import (
	"bytes"
	"debug/dwarf"
	"encoding/binary"
	"errors"
	"fmt"
	"path"
	"sync"
)

// Split DWARF (gcc and clang -gsplit-dwarf, DWARF 5): each compilation
// unit of the program is a skeleton (DW_TAG_skeleton_unit: its line
// table, address ranges and the name of a .dwo file) and the unit's
// functions and inlined calls are in that .dwo file, its addresses
// indices into the program's .debug_addr. Without the .dwo, frames have
// their lines but no inlined calls.

// maxDWOs bounds the .dwo files one object's frames read.
const maxDWOs = 4096

// splitUnit is the split compilation unit of a skeleton: the .dwo's
// DWARF, its unit's entry, the file table its call_file attributes
// index, and the names of its entries.
type splitUnit struct {
	d     *dwarf.Data
	cu    dwarf.Offset
	files []*dwarf.LineFile
	names *dieNames
}

// splitUnits finds and reads the .dwo files of an object's skeleton
// units, once each.
type splitUnits struct {
	// find opens the .dwo file named name (DW_AT_dwo_name) of a unit
	// compiled in compDir; findDWP the program's DWARF package, nil
	// when none is searched.
	find    func(compDir, name string) (*File, error)
	findDWP func() (*File, error)
	// main gives the object's .debug_info and .debug_addr, read on
	// first use.
	main func() (info, addr []byte, err error)

	// seen is called for each skeleton met; missed for each whose .dwo
	// was not found.
	seen, missed func()

	mu    sync.Mutex
	units map[dwarf.Offset]*splitUnit // by skeleton; nil when not found
	// dwp is the DWARF package, read at the first skeleton; nil when
	// there is none.
	dwp      *dwpPackage
	dwpTried bool
}

// unit returns the split unit of skeleton unit cu; nil when its .dwo
// cannot be found or read, or is of another build.
func (s *splitUnits) unit(cu *dwarf.Entry) *splitUnit {
	s.mu.Lock()
	defer s.mu.Unlock()
	if su, ok := s.units[cu.Offset]; ok {
		return su
	}
	if s.units == nil {
		s.units = make(map[dwarf.Offset]*splitUnit)
	}
	if s.seen != nil {
		s.seen()
	}
	var su *splitUnit
	if len(s.units) < maxDWOs {
		var err error
		if su, err = s.read(cu); err != nil {
			su = nil
		}
	}
	if su == nil && s.missed != nil {
		s.missed()
	}
	s.units[cu.Offset] = su
	return su
}

// read finds and reads the .dwo of skeleton cu.
func (s *splitUnits) read(cu *dwarf.Entry) (_ *splitUnit, err error) {
	defer recoverTo(&err, "read split DWARF unit")
	name, _ := cu.Val(dwarf.AttrDwoName).(string)
	compDir, _ := cu.Val(dwarf.AttrCompDir).(string)
	addrBase, _ := cu.Val(dwarf.AttrAddrBase).(int64)
	if name == "" {
		return nil, errors.New("skeleton unit without a DW_AT_dwo_name")
	}
	info, addr, err := s.main()
	if err != nil {
		return nil, err
	}
	id, ok := dwoID(info, cu.Offset)
	if !ok {
		return nil, errors.New("skeleton unit without a unit id")
	}
	if addrBase < 0 || addrBase > int64(len(addr)) {
		return nil, fmt.Errorf("DW_AT_addr_base %d outside .debug_addr", addrBase)
	}
	if !s.dwpTried && s.findDWP != nil {
		s.dwpTried = true
		if f, err := s.findDWP(); err == nil {
			s.dwp, _ = f.readDWP()
			f.Close()
		}
	}
	// The package first, as GDB looks: a unit it does not hold (by its
	// id: of another build) is looked for in its .dwo.
	if s.dwp != nil {
		if su, err := s.dwp.splitUnit(id, compDir, addr[addrBase:]); err == nil {
			return su, nil
		}
	}
	f, err := s.find(compDir, name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return f.readSplitUnit(id, compDir, addr[addrBase:])
}

// dwoID returns the unit id in the header of the DWARF 5 skeleton or
// split unit whose first entry is at off of .debug_info info: the 8
// bytes just before that entry.
func dwoID(info []byte, off dwarf.Offset) (uint64, bool) {
	if off < 8 || int64(off) > int64(len(info)) {
		return 0, false
	}
	return binary.LittleEndian.Uint64(info[off-8 : off]), true
}

// readSplitUnit reads f, a .dwo file, as the split unit with id: its
// DWARF with addr (the program's .debug_addr from the skeleton's
// DW_AT_addr_base on) as its .debug_addr.
func (f *File) readSplitUnit(id uint64, compDir string, addr []byte) (*splitUnit, error) {
	sec := map[string][]byte{}
	for _, name := range []string{"info", "abbrev", "str", "str_offsets", "line", "rnglists"} {
		b, err := f.section(".debug_"+name+".dwo", maxDWARFSize)
		if err != nil {
			return nil, err
		}
		sec[name] = b
	}
	return splitUnitOf(sec, id, compDir, addr)
}

// splitUnitOf makes the split unit with id of a .dwo's sections, by the
// suffix of their names after ".debug_" and before ".dwo", as
// [File.readSplitUnit] does. It modifies sec.
func splitUnitOf(sec map[string][]byte, id uint64, compDir string, addr []byte) (*splitUnit, error) {
	info := sec["info"]
	// The split unit's header: unit length (4), version (2), unit type
	// (1, DW_UT_split_compile), address size (1), abbreviations (4),
	// unit id (8). 64-bit DWARF is not read.
	const header = 20
	if len(info) < header || binary.LittleEndian.Uint32(info) >= 0xfffffff0 ||
		binary.LittleEndian.Uint16(info[4:]) != 5 || info[6] != 5 {
		return nil, errors.New(".dwo: no DWARF 5 split unit first")
	}
	if got, _ := dwoID(info, header); got != id {
		return nil, fmt.Errorf(".dwo: unit id %#x, want %#x: %w", got, id, errMismatch)
	}
	// The unit's string offsets and range lists follow their sections'
	// headers (8 and 12 bytes), where its bases implicitly are: the
	// sections given to debug/dwarf start there, as it takes a base of
	// 0 when the unit names none.
	for name, skip := range map[string]int{"str_offsets": 8, "rnglists": 12} {
		if b := sec[name]; len(b) >= skip {
			sec[name] = b[skip:]
		} else {
			sec[name] = nil
		}
	}
	sec["addr"] = addr
	line := sec["line"]
	delete(sec, "line")
	d, err := newDWARF(sec, info)
	if err != nil {
		return nil, err
	}
	su := &splitUnit{d: d, cu: header, files: dwoFiles(line, compDir)}
	su.names = &dieNames{entry: func(dwarf.Offset) *dwarf.Data { return d }, prepare: func([]dwarf.Offset) {}, cache: make(map[dieRef]string)}
	return su, nil
}

// dwoFiles returns the file table of a .dwo's .debug_line.dwo, which
// holds a line table header and no program: debug/dwarf reads one only
// for a unit that points at it, so it is given a unit made for that.
func dwoFiles(line []byte, compDir string) (files []*dwarf.LineFile) {
	if len(line) == 0 || !lineTableSafe(line) {
		return nil
	}
	defer func() {
		if recover() != nil {
			files = nil
		}
	}()
	// A DWARF 5 compile unit whose entry has DW_AT_stmt_list
	// (DW_FORM_sec_offset, 0) and DW_AT_comp_dir (DW_FORM_string).
	abbrev := []byte{1, 0x11, 0, 0x10, 0x17, 0x1b, 0x08, 0, 0, 0}
	var die bytes.Buffer
	die.WriteByte(1)
	die.Write([]byte{0, 0, 0, 0})
	die.WriteString(compDir)
	die.WriteByte(0)
	info := binary.LittleEndian.AppendUint32(nil, uint32(8+die.Len()))
	info = binary.LittleEndian.AppendUint16(info, 5)
	info = append(info, 1, 8) // DW_UT_compile, address size
	info = binary.LittleEndian.AppendUint32(info, 0)
	info = append(info, die.Bytes()...)
	d, err := dwarf.New(abbrev, nil, nil, info, line, nil, nil, nil)
	if err != nil {
		return nil
	}
	cu, err := d.Reader().Next()
	if err != nil || cu == nil {
		return nil
	}
	lr, err := d.LineReader(cu)
	if err != nil || lr == nil {
		return nil
	}
	return lr.Files()
}

// dwpFinder returns how the line table of the object at p, opened
// through open, finds its DWARF package: p with ".dwp" added, through
// open, then l's roots (l may be nil).
func (l *Loader) dwpFinder(open Opener, p string) func() (*File, error) {
	return func() (*File, error) {
		if !path.IsAbs(p) {
			return nil, fmt.Errorf("%s: no DWARF package searched for a relative path", p)
		}
		return openFirst(l.searchRoots(open), []string{p + ".dwp"}, nil)
	}
}

// dwoFinder returns how the line table of the object at p, opened
// through open, finds the .dwo files of its skeleton units, as GDB does:
// DW_AT_dwo_name itself when absolute, else under DW_AT_comp_dir, then
// next to the object; through open, then l's roots (l may be nil).
func (l *Loader) dwoFinder(open Opener, p string) func(compDir, name string) (*File, error) {
	return func(compDir, name string) (*File, error) {
		var paths []string
		if path.IsAbs(name) {
			paths = append(paths, name)
		} else if path.IsAbs(compDir) {
			paths = append(paths, path.Join(compDir, name))
		}
		if path.IsAbs(p) {
			paths = append(paths, path.Join(path.Dir(p), path.Base(name)))
		}
		f, err := openFirst(l.searchRoots(open), paths, nil)
		if err != nil {
			return nil, fmt.Errorf("split DWARF %s: %w", name, err)
		}
		return f, nil
	}
}

// SplitUnitsMissing returns how many of the skeleton units (split
// DWARF) that s's frames went through had no .dwo file found (nor a
// unit in a .dwp): frames there lack their inlined calls.
func (s *Symbols) SplitUnitsMissing() int {
	if s == nil || s.lines == nil {
		return 0
	}
	return int(s.lines.dwoMissing.Load())
}
