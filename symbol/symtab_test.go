package symbol

import (
	"debug/elf"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// symtabByDebugElf is what symtab read before it parsed tables itself:
// debug/elf's symbols, filtered as symtab filters them. It is the
// reference symtab must agree with.
func symtabByDebugElf(f *File, t elf.SectionType) (es []entry, err error) {
	defer recoverTo(&err, "read "+t.String())
	var syms []elf.Symbol
	if t == elf.SHT_SYMTAB {
		syms, err = f.elf.Symbols()
	} else {
		syms, err = f.elf.DynamicSymbols()
	}
	if err != nil {
		return nil, err
	}
	for _, s := range syms {
		if s.Section == elf.SHN_UNDEF || s.Section >= elf.SHN_LORESERVE || s.Value == 0 || s.Name == "" {
			continue
		}
		switch elf.ST_TYPE(s.Info) {
		case elf.STT_FUNC, elf.STT_LOOS:
		case elf.STT_NOTYPE:
			i := int(s.Section)
			if s.Name[0] == '$' || s.Name[0] == '.' || i >= len(f.elf.Sections) || f.elf.Sections[i].Flags&elf.SHF_EXECINSTR == 0 {
				continue
			}
		default:
			continue
		}
		es = append(es, entry{Symbol: Symbol{Name: s.Name, Addr: s.Value, Size: s.Size}, rank: bindingRank(s.Info), ifunc: elf.ST_TYPE(s.Info) == elf.STT_LOOS})
	}
	return es, nil
}

// checkSymtab fails t when f's symtab of type typ differs from debug/elf's
// reading of it, where debug/elf reads it at all.
func checkSymtab(t *testing.T, f *File, typ elf.SectionType) int {
	t.Helper()
	want, err := symtabByDebugElf(f, typ)
	if err != nil {
		return 0
	}
	got, gerr := f.symtab(typ)
	if gerr != nil && !(len(want) == 0 && errors.Is(gerr, ErrNoSymbols)) {
		t.Fatalf("%v: %v; debug/elf reads %d functions", typ, gerr, len(want))
	}
	if len(got) != len(want) {
		t.Fatalf("%v: %d functions, debug/elf %d", typ, len(got), len(want))
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("%v: function %d = %+v, debug/elf %+v", typ, i, got[i], want[i])
		}
	}
	return len(got)
}

// TestSymtabMatchesDebugElf: symtab reads the same functions, names,
// bindings and sizes as debug/elf's symbols of this test's own binary (Go)
// and of the system's libc, its separate debug file when installed, and
// the dynamic loader. FuzzNewFile compares the two on hostile files.
func TestSymtabMatchesDebugElf(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	paths := []string{exe}
	if runtime.GOARCH == "amd64" {
		paths = append(paths, "/lib/x86_64-linux-gnu/libc.so.6", "/lib64/ld-linux-x86-64.so.2")
		if f, err := Open(paths[1]); err == nil {
			if id := f.BuildID(); len(id) > 1 {
				paths = append(paths, fmt.Sprintf("/usr/lib/debug/.build-id/%x/%x.debug", id[:1], id[1:]))
			}
			f.Close()
		}
	}
	total := 0
	for _, p := range paths {
		f, err := Open(p)
		if err != nil {
			t.Logf("%s: %v", p, err)
			continue
		}
		t.Run(filepath.Base(p), func(t *testing.T) {
			n := checkSymtab(t, f, elf.SHT_SYMTAB)
			m := checkSymtab(t, f, elf.SHT_DYNSYM)
			t.Logf("%s: %d functions in .symtab, %d in .dynsym", p, n, m)
			total += n + m
		})
		f.Close()
	}
	if total < 1000 {
		t.Errorf("%d functions compared in all, want 1000 or more", total)
	}
}
