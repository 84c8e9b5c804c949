package symbol

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// A DWARF package (.dwp, made by llvm-dwp or dwp from a program's .dwo
// files) holds the split units of a whole program: each section is the
// concatenation of the units' contributions, and .debug_cu_index says
// where each unit's are, by unit id (DWARF 5, section 7.3.5).

// Section identifiers of a DWARF 5 unit index.
const (
	dwSectInfo       = 1
	dwSectAbbrev     = 3
	dwSectLine       = 4
	dwSectStrOffsets = 6
	dwSectRnglists   = 8
)

// dwpSections names the .dwo sections by their identifiers in a unit
// index, as [splitUnitOf] takes them.
var dwpSections = map[uint32]string{
	dwSectInfo: "info", dwSectAbbrev: "abbrev", dwSectLine: "line",
	dwSectStrOffsets: "str_offsets", dwSectRnglists: "rnglists",
}

// dwpPackage is a DWARF package's sections and its unit index.
type dwpPackage struct {
	sec   map[string][]byte // by the suffix after ".debug_", before ".dwo"
	index []byte            // .debug_cu_index
}

// readDWP reads the sections of f, a DWARF package, that split units
// are read from.
func (f *File) readDWP() (*dwpPackage, error) {
	p := &dwpPackage{sec: map[string][]byte{}}
	var err error
	if p.index, err = f.section(".debug_cu_index", maxDWARFSize); err != nil {
		return nil, err
	}
	if p.index == nil {
		return nil, errors.New("DWARF package without .debug_cu_index")
	}
	for _, name := range []string{"info", "abbrev", "str", "str_offsets", "line", "rnglists"} {
		if p.sec[name], err = f.section(".debug_"+name+".dwo", maxDWARFSize); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// unit returns the sections of the split unit with id, each cut to the
// unit's contribution (.debug_str.dwo, which the units share, whole), as
// [splitUnitOf] takes them; ok is false when the index has no such unit
// or is malformed.
func (p *dwpPackage) unit(id uint64) (sec map[string][]byte, ok bool) {
	row, cols, offs, sizes, ok := cuIndexRow(p.index, id)
	if !ok {
		return nil, false
	}
	sec = map[string][]byte{"str": p.sec["str"]}
	for i, c := range cols {
		name, want := dwpSections[c]
		if !want {
			continue
		}
		at := (row*len(cols) + i) * 4
		off, n := uint64(binary.LittleEndian.Uint32(offs[at:])), uint64(binary.LittleEndian.Uint32(sizes[at:]))
		b := p.sec[name]
		if off > uint64(len(b)) || n > uint64(len(b))-off {
			return nil, false
		}
		sec[name] = b[off : off+n]
	}
	if sec["info"] == nil || sec["abbrev"] == nil {
		return nil, false
	}
	return sec, true
}

// cuIndexRow finds the unit id in a DWARF 5 unit index: its row (from
// 0), the index's section identifiers, and its tables of offsets and
// sizes (rows of len(cols) 4-byte entries, the row of the section
// identifiers left out).
func cuIndexRow(b []byte, id uint64) (row int, cols []uint32, offs, sizes []byte, ok bool) {
	const header = 16
	if len(b) < header || binary.LittleEndian.Uint16(b) != 5 {
		return 0, nil, nil, nil, false
	}
	nsec := uint64(binary.LittleEndian.Uint32(b[4:]))
	nunits := uint64(binary.LittleEndian.Uint32(b[8:]))
	nslots := uint64(binary.LittleEndian.Uint32(b[12:]))
	// The hash table (8-byte ids), the row indices (4 bytes), the
	// section identifiers, then two tables of nunits rows.
	need := header + nslots*12 + nsec*4 + 2*nunits*nsec*4
	if nslots == 0 || nslots&(nslots-1) != 0 || nsec == 0 || nsec > 16 || nunits > nslots ||
		nslots > uint64(len(b)) || need > uint64(len(b)) {
		return 0, nil, nil, nil, false
	}
	ids, rows := b[header:], b[header+nslots*8:]
	mask := nslots - 1
	h, step := id&mask, (id>>32)&mask|1
	for range nslots {
		got := binary.LittleEndian.Uint64(ids[h*8:])
		r := uint64(binary.LittleEndian.Uint32(rows[h*4:]))
		if r == 0 {
			return 0, nil, nil, nil, false // an empty slot: not there
		}
		if got == id {
			if r > nunits {
				return 0, nil, nil, nil, false
			}
			colAt := header + nslots*12
			cols = make([]uint32, nsec)
			for i := range cols {
				cols[i] = binary.LittleEndian.Uint32(b[colAt+uint64(i)*4:])
			}
			offs = b[colAt+nsec*4:]
			sizes = b[colAt+nsec*4+nunits*nsec*4:]
			return int(r - 1), cols, offs, sizes, true
		}
		h = (h + step) & mask
	}
	return 0, nil, nil, nil, false
}

// splitUnit reads the split unit with id from package p.
func (p *dwpPackage) splitUnit(id uint64, compDir string, addr []byte) (*splitUnit, error) {
	sec, ok := p.unit(id)
	if !ok {
		return nil, fmt.Errorf("DWARF package: no unit %#x", id)
	}
	return splitUnitOf(sec, id, compDir, addr)
}
