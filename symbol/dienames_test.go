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
// 4 a subprogram with a DW_FORM_string name.
var testAbbrev = []byte{
	1, 0x11, 1, 0, 0,
	2, 0x2e, 0, 0x31, 0x10, 0, 0,
	3, 0x2e, 0, 0x47, 0x13, 0, 0,
	4, 0x2e, 0, 0x03, 0x08, 0, 0,
	0,
}

// testDIE is one entry of a hand-made unit: a reference (abbreviation 2
// or 3) to the entry with index ref, or (abbreviation 4) a name.
type testDIE struct {
	abbrev byte
	ref    int
	name   string
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
		if d.abbrev == 4 {
			info = append(append(info, d.name...), 0)
		} else {
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
		cache:   make(map[dwarf.Offset]string),
	}
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
	n.resolve([]dwarf.Offset{offs[0], offs[3], offs[5], offs[long], offs[long+2], past})
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
		got, ok := n.cache[c.off]
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
	f.Fuzz(func(t *testing.T, info []byte) {
		d, err := dwarf.New(testAbbrev, nil, nil, info, nil, nil, nil, nil)
		if err != nil {
			return
		}
		n := &dieNames{
			entry:   func(dwarf.Offset) *dwarf.Data { return d },
			prepare: func([]dwarf.Offset) {},
			cache:   make(map[dwarf.Offset]string),
		}
		var offs []dwarf.Offset
		for off := range min(len(info), 256) {
			offs = append(offs, dwarf.Offset(off))
		}
		n.resolve(offs)
		for _, off := range offs {
			if _, ok := n.cache[off]; !ok {
				t.Fatalf("offset %#x left unresolved", off)
			}
		}
	})
}
