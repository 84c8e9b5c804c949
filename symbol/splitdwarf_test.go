package symbol

import (
	"bytes"
	"context"
	"debug/elf"
	"encoding/binary"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"nsprof/internal/testutils"
)

// splitSource has a function inlined into another, as the fixture of
// TestSplitDWARF needs. (llvm-dwp 14, which packs TestSplitDWARFPackage's
// .dwo, loops without end over gcc 12's .dwo of some other programs
// as small: this one it packs.)
const splitSource = `#include <stdio.h>
#include <time.h>
static volatile unsigned long sink;
__attribute__((noinline)) void split_leaf(int n){ for(int i=0;i<n;i++) sink+=i*i; }
static inline void split_middle(int n){ split_leaf(n); split_leaf(n/2); }
__attribute__((noinline)) void split_outer(int n){ split_middle(n); }
int main(){ struct timespec s,e; clock_gettime(CLOCK_MONOTONIC,&s); do { split_outer(100000); clock_gettime(CLOCK_MONOTONIC,&e);} while(e.tv_sec-s.tv_sec<2); return 0; }
`

// buildSplit compiles splitSource in dir as prog.c with gcc, with extra
// flags, and returns the program, dir/prog.
func buildSplit(t *testing.T, dir string, flags ...string) string {
	t.Helper()
	return buildSplitWith(t, "gcc", dir, flags...)
}

// buildSplitWith is buildSplit with the compiler cc.
func buildSplitWith(t *testing.T, cc, dir string, flags ...string) string {
	t.Helper()
	src := filepath.Join(dir, "prog.c")
	if err := os.WriteFile(src, []byte(splitSource), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "prog")
	// Compiled, then linked: the .dwo is then named after the object
	// (clang puts a program's, made in one step, in the working
	// directory).
	run(t, cc, append(append([]string{"-O2", "-g", "-gdwarf-5", "-c"}, flags...), "-o", bin+".o", src)...)
	run(t, cc, "-o", bin, bin+".o")
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

// onlyDWO returns the .dwo file -gsplit-dwarf wrote in dir.
func onlyDWO(t *testing.T, dir string) string {
	t.Helper()
	dwos, _ := filepath.Glob(filepath.Join(dir, "*.dwo"))
	if len(dwos) != 1 {
		t.Fatalf("-gsplit-dwarf wrote .dwo files %v, want one", dwos)
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
//
// gcc's .dwo has a line table header of its own, which its inlined
// calls' call_file attributes index; clang's has none, and they index
// the skeleton's.
func TestSplitDWARF(t *testing.T) {
	for _, cc := range []string{"gcc", "clang-14"} {
		t.Run(cc, func(t *testing.T) { testSplitDWARF(t, cc) })
	}
}

func testSplitDWARF(t *testing.T, cc string) {
	dir := t.TempDir()
	plain := buildSplitWith(t, cc, t.TempDir())
	split := buildSplitWith(t, cc, dir, "-gsplit-dwarf")
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
	if syms.LinesUnread() || syms.SplitUnitsMissing() != 0 {
		t.Errorf("with the .dwo at hand: lines unread %v, %d units' .dwo missing", syms.LinesUnread(), syms.SplitUnitsMissing())
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
		if !syms.LinesUnread() || syms.SplitUnitsMissing() != 1 {
			t.Errorf("%s: lines unread %v, %d units' .dwo missing; want unread, 1", what, syms.LinesUnread(), syms.SplitUnitsMissing())
		}
	}
	check("no .dwo")

	// Another build's .dwo at its path: refused by its unit id.
	other := t.TempDir()
	buildSplitWith(t, cc, other, "-gsplit-dwarf", "-O1")
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

// A program whose .dwo files llvm-dwp packed into prog.dwp beside it
// gets its frames from the package, as from the .dwo files; a package of
// another build is not taken.
func TestSplitDWARFPackage(t *testing.T) {
	plain := buildSplit(t, t.TempDir())
	dir := t.TempDir()
	split := buildSplit(t, dir, "-gsplit-dwarf")
	llvmDWP(t, split)
	if err := os.Remove(onlyDWO(t, dir)); err != nil {
		t.Fatal(err)
	}
	want, _ := splitFrames(t, plain, &Loader{})
	got, syms := splitFrames(t, split, &Loader{})
	for pc, w := range want {
		if !slices.Equal(got[pc], w) {
			t.Errorf("%#x: frames %+v, want %+v", pc, got[pc], w)
		}
	}
	if syms.LinesUnread() {
		t.Error("lines unread with the package at hand")
	}

	other := t.TempDir()
	otherBin := buildSplit(t, other, "-gsplit-dwarf", "-O1")
	llvmDWP(t, otherBin)
	if err := os.Rename(otherBin+".dwp", split+".dwp"); err != nil {
		t.Fatal(err)
	}
	got, syms = splitFrames(t, split, &Loader{})
	for pc, fr := range got {
		if len(fr) > 1 {
			t.Errorf("another build's package: %#x: inlined frames %+v", pc, fr)
			break
		}
	}
	if !syms.LinesUnread() {
		t.Error("another build's package: lines not unread")
	}
}

// llvmDWP packs the .dwo files of bin into bin.dwp, within a minute.
func llvmDWP(t *testing.T, bin string) {
	t.Helper()
	p := testutils.LookPathOrSkip(t, "llvm-dwp")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if out, err := exec.CommandContext(ctx, p, "-e", bin, "-o", bin+".dwp").CombinedOutput(); err != nil {
		t.Fatalf("llvm-dwp -e %s: %v (%v)\n%s", bin, err, ctx.Err(), out)
	}
}

// FuzzCUIndex looks arbitrary ids up in arbitrary unit indexes: no
// panic, and what is found lies in the index.
func FuzzCUIndex(f *testing.F) {
	// One unit (id 7) in 2 slots, with an info and an abbrev column.
	idx := binary.LittleEndian.AppendUint16(nil, 5)
	idx = binary.LittleEndian.AppendUint16(idx, 0)
	for _, v := range []uint32{2, 1, 2} {
		idx = binary.LittleEndian.AppendUint32(idx, v)
	}
	idx = binary.LittleEndian.AppendUint64(binary.LittleEndian.AppendUint64(idx, 0), 7)
	for _, v := range []uint32{0, 1, dwSectInfo, dwSectAbbrev, 0, 0, 10, 4} {
		idx = binary.LittleEndian.AppendUint32(idx, v)
	}
	f.Add(idx, uint64(7))
	f.Fuzz(func(t *testing.T, idx []byte, id uint64) {
		row, cols, offs, sizes, ok := cuIndexRow(idx, id)
		if !ok {
			return
		}
		if end := (row + 1) * len(cols) * 4; end > len(offs) || end > len(sizes) {
			t.Fatalf("row %d of %d columns past the tables (%d, %d bytes)", row, len(cols), len(offs), len(sizes))
		}
		p := &dwpPackage{index: idx, sec: map[string][]byte{"info": make([]byte, 16), "abbrev": make([]byte, 16)}}
		p.unit(id)
	})
}
