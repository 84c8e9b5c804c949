package unwind

import (
	"debug/elf"
	"os"
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
	if _, err := os.Stat(libcPath); err != nil {
		testutils.RequireCI(t, "%s: %v", libcPath, err)
	}
	f, err := elf.Open(libcPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
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
