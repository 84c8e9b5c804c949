package symbol

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// splitSource has a function inlined into another, as the fixture of
// TestSplitDWARF needs.
const splitSource = `static volatile unsigned long split_sink;
__attribute__((noinline)) void split_leaf(int n) { for (int i = 0; i < n; i++) split_sink += (unsigned long)i * i; }
static inline void split_middle(int n) { split_leaf(n); split_leaf(n / 2); }
__attribute__((noinline)) void split_outer(int n) { split_middle(n); }
int main(int argc, char **argv) { split_outer(1000 + argc); return 0; }
`

// buildSplit compiles splitSource in dir as prog.c, with extra flags,
// and returns the program, dir/prog.
func buildSplit(t *testing.T, dir string, flags ...string) string {
	t.Helper()
	src := filepath.Join(dir, "prog.c")
	if err := os.WriteFile(src, []byte(splitSource), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "prog")
	run(t, "gcc", append(append([]string{"-O2", "-g", "-gdwarf-5"}, flags...), "-o", bin, src)...)
	return bin
}

// textOf returns bin's .text.
func textOf(t *testing.T, bin string) []byte {
	t.Helper()
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b, err := f.Section(".text").Data()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// onlyDWO returns the .dwo file gcc -gsplit-dwarf wrote in dir.
func onlyDWO(t *testing.T, dir string) string {
	t.Helper()
	dwos, _ := filepath.Glob(filepath.Join(dir, "*.dwo"))
	if len(dwos) != 1 {
		t.Fatalf("gcc -gsplit-dwarf wrote .dwo files %v, want one", dwos)
	}
	return dwos[0]
}

// splitFrames returns the frames at every address of split_outer in bin.
func splitFrames(t *testing.T, bin string, l *Loader) (frames map[uint64][]Frame, syms *Symbols) {
	t.Helper()
	syms, err := l.Load(openFile(t, bin), bin)
	if err != nil {
		t.Fatal(err)
	}
	frames = map[uint64][]Frame{}
	for _, s := range syms.Table().All() {
		if s.Name != "split_outer" {
			continue
		}
		for pc := s.Addr; pc < s.Addr+s.Size; pc++ {
			fr := syms.Frames(pc)
			for i := range fr {
				fr[i].File = filepath.Base(fr[i].File)
			}
			frames[pc] = fr
		}
	}
	if len(frames) == 0 {
		t.Fatal("no split_outer")
	}
	return frames, syms
}

// A program built with -gsplit-dwarf (DWARF 5 skeleton units, the
// functions in .dwo files) gets the frames, inlined calls and their
// lines included, that the same program built without gives; without
// its .dwo, or with one of another build, it gets no inlined calls, and
// its lines count as unread.
func TestSplitDWARF(t *testing.T) {
	dir := t.TempDir()
	plain := buildSplit(t, t.TempDir())
	split := buildSplit(t, dir, "-gsplit-dwarf")
	if !bytes.Equal(textOf(t, plain), textOf(t, split)) {
		t.Fatal("the split build's code differs from the plain one's: nothing to compare")
	}
	dwo := onlyDWO(t, dir)
	want, plainSyms := splitFrames(t, plain, &Loader{})
	if plainSyms.LinksOtherFiles() {
		t.Error("the plain build's DWARF refers to other files")
	}
	inlined := 0
	for _, fr := range want {
		if len(fr) > 1 && fr[0].Function == "split_middle" {
			inlined++
		}
	}
	if inlined == 0 {
		t.Fatalf("no address of split_outer in split_middle inlined: %v", want)
	}
	got, syms := splitFrames(t, split, &Loader{})
	for pc, w := range want {
		if !slices.Equal(got[pc], w) {
			t.Errorf("%#x: frames %+v, want %+v", pc, got[pc], w)
		}
	}
	if syms.LinesUnread() {
		t.Error("lines unread with the .dwo at hand")
	}
	if !syms.LinksOtherFiles() {
		t.Error("the split build's DWARF does not refer to other files")
	}

	// Without the .dwo: the outer frames only.
	moved := dwo + ".away"
	if err := os.Rename(dwo, moved); err != nil {
		t.Fatal(err)
	}
	check := func(what string) {
		t.Helper()
		got, syms := splitFrames(t, split, &Loader{})
		for pc, fr := range got {
			if len(fr) > 1 {
				t.Errorf("%s: %#x: inlined frames %+v", what, pc, fr)
				break
			}
		}
		if !syms.LinesUnread() {
			t.Errorf("%s: lines not unread", what)
		}
	}
	check("no .dwo")

	// Another build's .dwo at its path: refused by its unit id.
	other := t.TempDir()
	buildSplit(t, other, "-gsplit-dwarf", "-O1")
	if err := os.Rename(onlyDWO(t, other), dwo); err != nil {
		t.Fatal(err)
	}
	check("another build's .dwo")
}

// FuzzSplitUnit reads arbitrary .debug_info.dwo and .debug_line.dwo
// bytes as a split unit, and names its entries: no panic.
func FuzzSplitUnit(f *testing.F) {
	info, _ := testUnit([]testDIE{{abbrev: 2, ref: 1}, {abbrev: 4, name: "f"}})
	// As a split unit: version 5, DW_UT_split_compile, the unit id.
	split := binary.LittleEndian.AppendUint32(nil, uint32(len(info)-4+9))
	split = append(binary.LittleEndian.AppendUint16(split, 5), 5, 8, 0, 0, 0, 0)
	split = binary.LittleEndian.AppendUint64(split, 42)
	split = append(split, info[11:]...)
	f.Add(split, []byte{})
	f.Fuzz(func(t *testing.T, info, line []byte) {
		su, err := splitUnitOf(map[string][]byte{"info": info, "abbrev": testAbbrev, "line": line}, 42, "/src", nil)
		if err != nil {
			return
		}
		r := su.d.Reader()
		var refs []dieRef
		for range 256 {
			e, err := r.Next()
			if err != nil || e == nil {
				break
			}
			refs = append(refs, dieRef{off: e.Offset})
		}
		su.names.resolve(refs)
	})
}
