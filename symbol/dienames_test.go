package symbol

import (
	"debug/dwarf"
	"encoding/binary"
	"testing"
	"time"
)

// testAbbrev is a .debug_abbrev for hand-made units: 1 a compile unit
// with children; 2 a subprogram whose abstract origin is a
// DW_FORM_ref_addr; 3 a subprogram whose specification is a DW_FORM_ref4;
// 4 a subprogram with a DW_FORM_string name; 5 a subprogram whose
// abstract origin is a DW_FORM_GNU_ref_alt; 6 a subprogram whose name is
// a DW_FORM_GNU_strp_alt.
var testAbbrev = []byte{
	1, 0x11, 1, 0, 0,
	2, 0x2e, 0, 0x31, 0x10, 0, 0,
	3, 0x2e, 0, 0x47, 0x13, 0, 0,
	4, 0x2e, 0, 0x03, 0x08, 0, 0,
	5, 0x2e, 0, 0x31, 0xa0, 0x3e, 0, 0,
	6, 0x2e, 0, 0x03, 0xa1, 0x3e, 0, 0,
	0,
}

// testDIE is one entry of a hand-made unit: a reference (abbreviation 2
// or 3) to the entry with index ref, a name (abbreviation 4), or an
// offset into the supplementary file's .debug_info or .debug_str
// (abbreviations 5 and 6): raw.
type testDIE struct {
	abbrev byte
	ref    int
	name   string
	raw    uint32
}

// testUnit returns a DWARF 4 unit of a compile unit holding dies, and
// the offset of each of them.
func testUnit(dies []testDIE) (info []byte, offs []dwarf.Offset) {
	const header = 11
	at := header + 1
	for _, d := range dies {
		offs = append(offs, dwarf.Offset(at))
		at++
		if d.abbrev == 4 {
			at += len(d.name) + 1
		} else {
			at += 4
		}
	}
	info = binary.LittleEndian.AppendUint32(nil, uint32(at+1-4))
	info = binary.LittleEndian.AppendUint16(info, 4)
	info = binary.LittleEndian.AppendUint32(info, 0)
	info = append(info, 8, 1)
	for _, d := range dies {
		info = append(info, d.abbrev)
		switch d.abbrev {
		case 4:
			info = append(append(info, d.name...), 0)
		case 5, 6:
			info = binary.LittleEndian.AppendUint32(info, d.raw)
		default:
			info = binary.LittleEndian.AppendUint32(info, uint32(offs[d.ref])) // the unit is at 0
		}
	}
	return append(info, 0), offs
}

func testNames(t *testing.T, info []byte) *dieNames {
	t.Helper()
	d, err := dwarf.New(testAbbrev, nil, nil, info, nil, nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return &dieNames{
		entry:   func(dwarf.Offset) *dwarf.Data { return d },
		prepare: func([]dwarf.Offset) {},
		cache:   make(map[dieRef]string),
	}
}

// refs returns the entries of the file read at offs.
func refs(offs ...dwarf.Offset) []dieRef {
	r := make([]dieRef, len(offs))
	for i, off := range offs {
		r[i] = dieRef{off: off}
	}
	return r
}

// Chains of abstract origins and specifications, across forms, are
// followed to the name at their end; cyclic, endless or dangling ones end
// unnamed, at once.
func TestDIENamesChains(t *testing.T) {
	dies := []testDIE{
		{abbrev: 2, ref: 1},        // 0: origin -> 1
		{abbrev: 3, ref: 2},        // 1: specification -> 2
		{abbrev: 4, name: "found"}, // 2
		{abbrev: 2, ref: 4},        // 3: origin -> 4
		{abbrev: 3, ref: 3},        // 4: specification -> 3, a cycle
		{abbrev: 2, ref: 5},        // 5: its own origin
	}
	// 6...: a chain one longer than maxNameHops, ending in a name.
	long := len(dies)
	for i := range maxNameHops + 1 {
		dies = append(dies, testDIE{abbrev: 2, ref: long + i + 1})
	}
	dies = append(dies, testDIE{abbrev: 4, name: "too far"})
	info, offs := testUnit(dies)
	past := dwarf.Offset(len(info) + 100) // no entry there
	n := testNames(t, info)
	start := time.Now()
	n.resolve(refs(offs[0], offs[3], offs[5], offs[long], offs[long+2], past))
	if d := time.Since(start); d > time.Second {
		t.Errorf("resolve took %v", d)
	}
	for _, c := range []struct {
		off  dwarf.Offset
		want string
	}{
		{offs[0], "found"},
		{offs[3], ""},
		{offs[5], ""},
		{offs[long], ""},
		{offs[long+2], "too far"},
		{past, ""},
	} {
		got, ok := n.cache[dieRef{off: c.off}]
		if !ok || got != c.want {
			t.Errorf("name of the entry at %#x = %q (cached %v), want %q", c.off, got, ok, c.want)
		}
	}
}

// FuzzDIENames resolves the name of every offset of arbitrary unit bytes
// read with testAbbrev: it must end, without panicking.
func FuzzDIENames(f *testing.F) {
	info, _ := testUnit([]testDIE{{abbrev: 2, ref: 1}, {abbrev: 3, ref: 0}, {abbrev: 4, name: "f"}})
	f.Add(info)
	info, offs := testUnit([]testDIE{{abbrev: 5, raw: 0}, {abbrev: 6, raw: 0}, {abbrev: 4, name: "g"}})
	info[offs[0]+1] = byte(offs[2]) // the origin: "g", read as the supplementary file's
	f.Add(info)
	f.Fuzz(func(t *testing.T, info []byte) {
		d, err := dwarf.New(testAbbrev, nil, nil, info, nil, nil, nil, nil)
		if err != nil {
			return
		}
		// The same bytes are their own supplementary file.
		alt := &altDWARF{d: d, str: info}
		n := &dieNames{
			entry:   func(dwarf.Offset) *dwarf.Data { return d },
			prepare: func([]dwarf.Offset) {},
			alt:     func() *altDWARF { return alt },
			cache:   make(map[dieRef]string),
		}
		var rs []dieRef
		for off := range min(len(info), 256) {
			rs = append(rs, dieRef{off: dwarf.Offset(off)}, dieRef{off: dwarf.Offset(off), alt: true})
		}
		n.resolve(rs)
		for _, r := range rs {
			if _, ok := n.cache[r]; !ok {
				t.Fatalf("entry %+v left unresolved", r)
			}
		}
	})
}

// Names and abstract origins in a supplementary file (dwz -m's
// DW_FORM_GNU_strp_alt and DW_FORM_GNU_ref_alt) are read there; without
// the file they stay unnamed, as is a reference into it from the file
// itself.
func TestDIENamesAlt(t *testing.T) {
	altInfo, altOffs := testUnit([]testDIE{
		{abbrev: 4, name: "in_alt"}, // 0
		{abbrev: 2, ref: 0},         // 1: origin -> 0, within the file
		{abbrev: 5, raw: 0},         // 2: an alternate reference in the supplementary file itself
	})
	altStr := []byte("\x00alt_string\x00")
	info, offs := testUnit([]testDIE{
		{abbrev: 5, raw: uint32(altOffs[1])},  // 0: origin -> the supplementary file's 1
		{abbrev: 6, raw: 1},                   // 1: named "alt_string" there
		{abbrev: 2, ref: 0},                   // 2: origin -> 0
		{abbrev: 6, raw: uint32(len(altStr))}, // 3: a string past its end
	})
	altD, err := dwarf.New(testAbbrev, nil, nil, altInfo, nil, nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, withAlt := range []bool{true, false} {
		n := testNames(t, info)
		if withAlt {
			n.alt = func() *altDWARF { return &altDWARF{d: altD, str: altStr} }
		}
		rs := append(refs(offs...), dieRef{off: altOffs[2], alt: true})
		n.resolve(rs)
		want := []string{"in_alt", "alt_string", "in_alt", "", ""}
		if !withAlt {
			want = []string{"", "", "", "", ""}
		}
		for i, r := range rs {
			if got := n.cache[r]; got != want[i] {
				t.Errorf("with the supplementary file %v: name of %+v = %q, want %q", withAlt, r, got, want[i])
			}
		}
	}
}
