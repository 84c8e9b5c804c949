package unwind

import (
	"debug/elf"
	"encoding/binary"
	"os"
	"strings"
	"testing"

	"nsprof/internal/testutils"
)

// sectionTable builds a table from one section of the ELF file at path.
func sectionTable(t *testing.T, path, name string) (*Table, []fde) {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var s section
	var ok bool
	if name == ".eh_frame" {
		s, ok, err = ehFrame(f, maxSection)
	} else {
		s, ok, err = debugFrame(f, maxSection)
	}
	if err != nil || !ok {
		t.Fatalf("%s of %s: ok %v, %v", name, path, ok, err)
	}
	fdes, err := parseFDEs(s)
	if err != nil {
		t.Fatal(err)
	}
	tab := &Table{}
	if err := tab.build(append([]fde(nil), fdes...)); err != nil {
		t.Fatal(err)
	}
	return tab, fdes
}

// openLibc opens libc as an ELF file, closed when the test ends.
func openLibc(t *testing.T) *elf.File {
	t.Helper()
	if _, err := os.Stat(libcPath); err != nil {
		testutils.RequireCI(t, "%s: %v", libcPath, err)
	}
	f, err := elf.Open(libcPath)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

func TestDebugFrameOnly(t *testing.T) {
	bin := testutils.BuildFixture(t, "omitfp", "-O2", "-fomit-frame-pointer", "-fno-asynchronous-unwind-tables", "-fno-exceptions")
	tab, fdes := sectionTable(t, bin, ".debug_frame")
	if len(fdes) < 6 {
		t.Fatalf(".debug_frame has %d FDEs, want one per fixture function", len(fdes))
	}
	compareOracle(t, tab, readelfRows(t, bin, ".debug_frame"))
}

// The .eh_frame_hdr search table lists every FDE of .eh_frame, and
// .eh_frame found through it (as for an object without section headers)
// gives the same FDEs.
func TestEHFrameHdr(t *testing.T) {
	f := openLibc(t)
	hs := f.Section(".eh_frame_hdr")
	data, _ := hs.Data()
	h, err := parseHdr(data, hs.Addr)
	if err != nil {
		t.Fatal(err)
	}
	if eh := f.Section(".eh_frame"); h.ehFrame != eh.Addr {
		t.Fatalf("eh_frame_ptr %#x, section at %#x", h.ehFrame, eh.Addr)
	}
	_, fdes := sectionTable(t, libcPath, ".eh_frame")
	if len(h.entries) != len(fdes) {
		t.Fatalf("%d hdr entries, %d FDEs", len(h.entries), len(fdes))
	}
	byPC := make(map[uint64]bool)
	for _, f := range fdes {
		byPC[f.begin] = true
	}
	for _, e := range h.entries {
		if !byPC[e.pc] {
			t.Fatalf("hdr entry %#x has no FDE", e.pc)
		}
	}

	// Without section headers: through PT_GNU_EH_FRAME.
	f.Sections = nil
	s, ok, err := ehFrame(f, maxSection)
	if err != nil || !ok {
		t.Fatalf("ehFrame without sections: %v %v", ok, err)
	}
	got, err := parseFDEs(s)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(fdes) || got[0].begin != fdes[0].begin {
		t.Fatalf("through PT_GNU_EH_FRAME: %d FDEs, want %d", len(got), len(fdes))
	}
}

func TestPointerEncodings(t *testing.T) {
	for _, c := range []struct {
		enc  byte
		data []byte
		want uint64
	}{
		{peAbsptr, []byte{1, 2, 3, 4, 5, 6, 7, 8}, 0x0807060504030201},
		{peULEB128, []byte{0xe5, 0x8e, 0x26}, 624485},
		{peUdata2, []byte{0xff, 0xff}, 0xffff},
		{peUdata4, []byte{1, 0, 0, 0x80}, 0x80000001},
		{peSLEB128, []byte{0x7f}, ^uint64(0)},
		{peSdata2, []byte{0xfe, 0xff}, ^uint64(1)},
		{peSdata4 | pePCRel, []byte{0xf0, 0xff, 0xff, 0xff}, 0x1000 - 16},
		{peSdata4 | peDataRel, []byte{8, 0, 0, 0}, 0x2000 + 8},
		{peUdata4 | peTextRel, []byte{8, 0, 0, 0}, 0x3000 + 8},
		{peSdata8, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, ^uint64(0)},
		{peUdata8 | peAligned, []byte{0, 0, 0, 0, 0, 0, 0, 0, 9, 0, 0, 0, 0, 0, 0, 0}, 9},
	} {
		r := buf{b: c.data, vaddr: 0x1000 - 4, data: 0x2000, text: 0x3000}
		if c.enc&0x70 == pePCRel {
			r.off = 4
			r.b = append(make([]byte, 4), c.data...)
		}
		if c.enc&0x70 == peAligned {
			r.off = 4
			r.vaddr = 0
		}
		got, ok := r.ptr(c.enc)
		if !ok || r.bad || got != c.want {
			t.Errorf("enc %#x %x: got %#x ok %v bad %v, want %#x", c.enc, c.data, got, ok, r.bad, c.want)
		}
	}
}

// TestLocationBackward: an FDE whose instructions move the location back
// (DW_CFA_set_loc to an earlier address, or an advance wrapping around) is malformed. It is left out with an error naming it, and the
// rows of the other FDEs stay sorted. Before, its rows were kept out of
// order (found by FuzzCFI), and lookups in the table went wrong.
func TestLocationBackward(t *testing.T) {
	c := &cie{codeAlign: 1, dataAlign: -8, raReg: 16, fdeEnc: peUdata8,
		initial: []byte{cfaDefCFA, 7, 8, cfaOffset | 16, 1}}
	le64 := func(v uint64) []byte { return binary.LittleEndian.AppendUint64(nil, v) }
	// A code alignment factor of -16 (as a uint64) makes every advance
	// wrap around to a lower address.
	wrap := *c
	wrap.codeAlign = ^uint64(15)
	for _, bad := range []struct {
		name  string
		cie   *cie
		insns []byte
	}{
		{"set_loc back", c, append(append([]byte{cfaAdvanceLoc1, 0x10, cfaDefCFAOffset, 16, cfaSetLoc}, le64(0x2004)...), cfaDefCFAOffset, 24)},
		{"advance wraps", &wrap, []byte{cfaDefCFAOffset, 16, cfaAdvanceLoc | 1, cfaDefCFAOffset, 24}},
		{"advance_loc4 wraps", &wrap, []byte{cfaDefCFAOffset, 16, cfaAdvanceLoc4, 1, 0, 0, 0, cfaDefCFAOffset, 24}},
	} {
		t.Run(bad.name, func(t *testing.T) {
			fdes := []fde{
				{cie: c, begin: 0x1000, end: 0x1100, insns: []byte{cfaAdvanceLoc | 4, cfaDefCFAOffset, 16}, off: 0x18},
				{cie: bad.cie, begin: 0x2000, end: 0x2100, insns: bad.insns, off: 0x40},
				{cie: c, begin: 0x3000, end: 0x3100, insns: []byte{cfaAdvanceLoc | 4, cfaDefCFAOffset, 16}, off: 0x80},
			}
			c.inited, wrap.inited = false, false
			tab := &Table{}
			err := tab.build(fdes)
			if err == nil || !strings.Contains(err.Error(), "FDE at 0x40") {
				t.Errorf("build: error %v, want one naming the FDE at 0x40", err)
			}
			for i := 1; i < len(tab.rows); i++ {
				if tab.rows[i].addr < tab.rows[i-1].addr {
					t.Fatalf("rows unsorted at %d: %#x after %#x", i, tab.rows[i].addr, tab.rows[i-1].addr)
				}
			}
			if tab.fdes != 2 {
				t.Errorf("%d FDEs in the table, want the 2 good ones", tab.fdes)
			}
			if r := tab.find(0x2008); r != nil {
				t.Errorf("find(0x2008) in the bad FDE: %+v, want none", *r)
			}
			if r := tab.find(0x3008); r == nil || r.cfaOff != 16 {
				t.Errorf("find(0x3008): %+v, want CFA offset 16", r)
			}
		})
	}
}
