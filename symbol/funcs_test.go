package symbol

import (
	"debug/elf"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestFuncsFileOffset finds the fixture's functions by name, in the
// unstripped library and (exported ones only) in its stripped copy, and
// converts their addresses to the file offsets a user probe is placed
// at: the bytes there must be the function's first bytes.
func TestFuncsFileOffset(t *testing.T) {
	dir := t.TempDir()
	lib := fixtureLib(t, dir)
	stripped := stripAll(t, lib, filepath.Join(dir, "stripped", "libfixture.so"))
	addrs := symAddrs(t, lib)
	for _, tc := range []struct {
		name, path string
		want       []string
	}{
		{"unstripped", lib, []string{"fixture_leaf", "fixture_middle", "fixture_outer", "fixture_static"}},
		{"stripped", stripped, []string{"fixture_leaf", "fixture_middle", "fixture_outer"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := openFile(t, tc.path)
			syms, err := f.Funcs(func(n string) bool {
				return strings.HasPrefix(n, "fixture_") && n != "fixture_sink"
			})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, s := range syms {
				got = append(got, s.Name)
				if s.Addr != addrs[s.Name] {
					t.Errorf("%s at %#x, want %#x", s.Name, s.Addr, addrs[s.Name])
				}
				off, ok := f.FileOffset(s.Addr)
				if !ok {
					t.Fatalf("%s: no file offset for %#x", s.Name, s.Addr)
				}
				if v, ok := f.Vaddr(off); !ok || v != s.Addr {
					t.Errorf("%s: Vaddr(FileOffset(%#x)) = %#x, %v", s.Name, s.Addr, v, ok)
				}
				checkCodeAt(t, tc.path, s, off)
			}
			if strings.Join(got, " ") != strings.Join(tc.want, " ") {
				t.Errorf("Funcs = %v, want %v", got, tc.want)
			}
		})
	}
	f := openFile(t, lib)
	if _, ok := f.FileOffset(0); ok {
		t.Error("FileOffset(0) found a segment")
	}
}

// checkCodeAt checks that the file's bytes at off are those debug/elf
// reads at the symbol's address in its section.
func checkCodeAt(t *testing.T, path string, s Symbol, off uint64) {
	t.Helper()
	ef, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer ef.Close()
	text := ef.Section(".text")
	want := make([]byte, 8)
	if _, err := text.ReadAt(want, int64(s.Addr-text.Addr)); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, 8)
	fh, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	if _, err := fh.ReadAt(got, int64(off)); err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Errorf("%s: bytes at file offset %#x are %x, want %x", s.Name, off, got, want)
	}
}
