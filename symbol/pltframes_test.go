package symbol

import (
	"testing"
)

// A sampled PLT stub of libc (a call through its own PLT, to memcpy's
// IFUNC choice, say) lies outside every unit of .debug_aranges. Asking its
// frames read the whole of libc's DWARF (about 16 MB live at a recording's
// end) to find no unit still: it is answered from the section headers, and
// the other addresses' units are read alone.
func TestPLTFramesReadNoDWARF(t *testing.T) {
	libc := openHostLibc(t)
	s := loadFrames(t, hostLibc)
	if s.lines == nil {
		t.Fatalf("%s: no DWARF found (source %s)", hostLibc, s.Source())
	}
	plt := libc.elf.Section(".plt")
	if plt == nil || plt.Size < 32 {
		t.Skipf("%s has no .plt", hostLibc)
	}
	var qsort uint64
	for _, sym := range s.table.All() {
		if sym.Name == "qsort" {
			qsort = sym.Addr + 4
		}
	}
	if qsort == 0 {
		t.Fatal("no qsort in libc's symbols")
	}
	stub := plt.Addr + 16 // the first entry after the lazy resolver's
	s.PrepareFrames([]uint64{qsort, stub})
	if fr := s.Frames(stub); len(fr) != 0 {
		t.Errorf("PLT stub %#x: frames %+v", stub, fr)
	}
	if fr := s.Frames(qsort); len(fr) == 0 {
		t.Errorf("qsort %#x: no frames", qsort)
	}
	if x := s.lines.inl; x == nil || x.full == nil {
		t.Errorf("frames of a PLT stub read the whole DWARF of %s", hostLibc)
	}
}
