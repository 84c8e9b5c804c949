package record

import (
	"debug/elf"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"nsprof/capture"
	"nsprof/container"
	"nsprof/internal/testutils"
	"nsprof/symbol"
)

// imageSym builds a C program defining function fn and returns its path,
// build-id and the file offset of fn's first instruction.
func imageSym(t *testing.T, fn string) (path string, id []byte, off uint64) {
	t.Helper()
	src := filepath.Join(t.TempDir(), fn+".c")
	code := "int " + fn + "(int x) { for (int i = 0; i < x; i++) x ^= i * 7; return x; }\nint main(int c, char **v) { return " + fn + "(c); }\n"
	if err := os.WriteFile(src, []byte(code), 0o644); err != nil {
		t.Fatal(err)
	}
	path = testutils.BuildC(t, src, "-Wl,--build-id")
	ef, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer ef.Close()
	syms, err := ef.Symbols()
	if err != nil {
		t.Fatal(err)
	}
	var va uint64
	for _, s := range syms {
		if s.Name == fn {
			va = s.Value
		}
	}
	for _, p := range ef.Progs {
		if p.Type == elf.PT_LOAD && va >= p.Vaddr && va < p.Vaddr+p.Memsz {
			off = va - p.Vaddr + p.Off
		}
	}
	if va == 0 || off == 0 {
		t.Fatalf("%s: no %s in a loaded segment", path, fn)
	}
	f, err := symbol.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	return path, f.BuildID(), off
}

// A child runs its parent's image until it execs: the addresses sampled
// before the exec are named from the old image's file, those after from
// the new one's, whichever order the rings deliver them in; an address
// both images map is left unnamed rather than given the other's name.
func TestSymbolizerNamesImagesBeforeExec(t *testing.T) {
	oldPath, oldID, oldOff := imageSym(t, "old_image_fn")
	newPath, newID, newOff := imageSym(t, "new_image_fn")
	gone := func(int) (*container.Process, error) { return nil, errors.New("no such process") }
	const pid = 42
	user := func(a uint64) []uint64 { return []uint64{capture.ContextUser, a} }
	names := func(syms []capture.Symbol) map[uint64]string {
		out := make(map[uint64]string)
		for _, s := range syms {
			out[s.Begin] = s.Name
		}
		return out
	}
	name := func(syms []capture.Symbol, a uint64) string {
		for _, s := range syms {
			if s.PID == pid && a >= s.Begin && a <= s.End {
				return s.Name
			}
		}
		return ""
	}
	bundle := func(s *symbolizer) []capture.Symbol {
		out, _ := bundleAll(s, func() (kernelTable, error) { return nil, errors.New("none") }, func(int) int { return 0 }, nil, func(string, ...any) {})
		return out
	}

	t.Run("apart", func(t *testing.T) {
		s := newSymbolizer()
		s.open = gone
		defer s.close()
		const oldBase, newBase = 0x400000, 0x7f0000000000
		s.mapped(pid, container.Mapping{Path: oldPath, Start: oldBase, End: oldBase + 1<<20, BuildID: oldID})
		oldA := oldBase + oldOff
		s.sampled(pid, user(oldA), false, 10)
		// A sample of the new image read before the exec, from another
		// CPU's ring, and one of the old image read after it.
		newA := newBase + newOff
		s.execed(pid, 20)
		s.mapped(pid, container.Mapping{Path: newPath, Start: newBase, End: newBase + 1<<20, BuildID: newID})
		s.sampled(pid, user(newA), false, 30)
		out := bundle(s)
		if got := name(out, oldA); got != "old_image_fn" {
			t.Errorf("address %#x sampled before the exec named %q, want old_image_fn (bundle %v)", oldA, got, names(out))
		}
		if got := name(out, newA); got != "new_image_fn" {
			t.Errorf("address %#x sampled after the exec named %q, want new_image_fn (bundle %v)", newA, got, names(out))
		}
		if s.shadowed != 0 {
			t.Errorf("%d addresses shadowed, want 0", s.shadowed)
		}
	})

	t.Run("late sample of the old image", func(t *testing.T) {
		s := newSymbolizer()
		s.open = gone
		defer s.close()
		const oldBase, newBase = 0x400000, 0x7f0000000000
		s.mapped(pid, container.Mapping{Path: oldPath, Start: oldBase, End: oldBase + 1<<20, BuildID: oldID})
		s.execed(pid, 20)
		s.mapped(pid, container.Mapping{Path: newPath, Start: newBase, End: newBase + 1<<20, BuildID: newID})
		oldA := oldBase + oldOff
		s.sampled(pid, user(oldA), false, 15) // read after the exec at 20
		if got := name(bundle(s), oldA); got != "old_image_fn" {
			t.Errorf("address %#x sampled at 15, read after the exec at 20, named %q, want old_image_fn", oldA, got)
		}
	})

	t.Run("early sample of the new image", func(t *testing.T) {
		s := newSymbolizer()
		s.open = gone
		defer s.close()
		const oldBase, newBase = 0x400000, 0x7f0000000000
		s.mapped(pid, container.Mapping{Path: oldPath, Start: oldBase, End: oldBase + 1<<20, BuildID: oldID})
		newA := newBase + newOff
		s.sampled(pid, user(newA), false, 30) // read before the exec at 20
		s.execed(pid, 20)
		s.mapped(pid, container.Mapping{Path: newPath, Start: newBase, End: newBase + 1<<20, BuildID: newID})
		if got := name(bundle(s), newA); got != "new_image_fn" {
			t.Errorf("address %#x sampled at 30, read before the exec at 20, named %q, want new_image_fn", newA, got)
		}
	})

	t.Run("overlapping", func(t *testing.T) {
		s := newSymbolizer()
		s.open = gone
		defer s.close()
		const base = 0x400000 // both non-PIE, as the go command and the compiler are
		s.mapped(pid, container.Mapping{Path: oldPath, Start: base, End: base + 1<<20, BuildID: oldID})
		oldA := base + oldOff
		s.sampled(pid, user(oldA), false, 10)
		s.execed(pid, 20)
		s.mapped(pid, container.Mapping{Path: newPath, Start: base, End: base + 1<<20, BuildID: newID})
		out := bundle(s)
		if got := name(out, oldA); got != "" {
			t.Errorf("address %#x sampled before the exec, mapped by both images, named %q; want no name", oldA, got)
		}
		if s.shadowed != 1 {
			t.Errorf("%d addresses shadowed, want 1", s.shadowed)
		}
	})
}
