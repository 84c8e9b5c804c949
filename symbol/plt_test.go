package symbol

import (
	"bufio"
	"maps"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"nsprof/internal/testutils"
)

// pltLayouts are the link options that give the x86-64 PLT layouts GNU ld
// writes: lazy .plt with .plt.got, eager binding, IBT's .plt.sec (with
// 16-byte .plt.got entries), a non-PIE executable, a shared library.
var pltLayouts = map[string][]string{
	"lazy":    nil,
	"now":     {"-Wl,-z,now"},
	"ibt":     {"-fcf-protection=full", "-Wl,-z,ibtplt"},
	"ibt-now": {"-fcf-protection=full", "-Wl,-z,ibtplt", "-Wl,-z,now"},
	"no-pie":  {"-no-pie"},
	"shared":  {"-shared", "-fPIC"},
}

// objdumpPLT returns the NAME@plt labels objdump -d prints for path, by
// address: the oracle for pltSymbols.
func objdumpPLT(t *testing.T, path string) map[uint64]string {
	t.Helper()
	out := run(t, "objdump", "-d", "--no-show-raw-insn", path)
	label := regexp.MustCompile(`^([0-9a-f]+) <([^>+]+@plt)>:$`)
	m := map[uint64]string{}
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		g := label.FindStringSubmatch(sc.Text())
		if g == nil {
			continue
		}
		a, err := strconv.ParseUint(g[1], 16, 64)
		if err != nil {
			t.Fatal(err)
		}
		m[a] = g[2]
	}
	return m
}

// Every PLT entry objdump names is named the same, at the same address,
// and nothing else is, in each layout, stripped or not.
func TestPLTSymbolsMatchObjdump(t *testing.T) {
	for _, layout := range slices.Sorted(maps.Keys(pltLayouts)) {
		t.Run(layout, func(t *testing.T) {
			bin := testutils.BuildC(t, filepath.Join("testdata", "pltcalls.c"), pltLayouts[layout]...)
			stripped := stripAll(t, bin, filepath.Join(t.TempDir(), "pltcalls"))
			want := objdumpPLT(t, stripped)
			for _, n := range []string{"strtol@plt", "getenv@plt", "snprintf@plt"} {
				if !slices.Contains(slices.Collect(maps.Values(want)), n) {
					t.Fatalf("objdump names no %s: %v", n, want)
				}
			}
			got := map[uint64]string{}
			for _, e := range openFile(t, stripped).pltSymbols() {
				if old, dup := got[e.Addr]; dup {
					t.Errorf("two names at %#x: %s and %s", e.Addr, old, e.Name)
				}
				got[e.Addr] = e.Name
			}
			if !maps.Equal(got, want) {
				t.Errorf("pltSymbols:\n%v\nobjdump:\n%v", got, want)
			}
			// Through Symbols, an address inside each entry has its name,
			// in the stripped file and in the one with a .symtab.
			for _, p := range []string{stripped, bin} {
				tab, err := openFile(t, p).Symbols()
				if err != nil {
					t.Fatalf("%s: %v", p, err)
				}
				for a, n := range want {
					if s, ok := tab.Lookup(a + 6); !ok || s.Name != n {
						t.Errorf("%s: Lookup(%#x) = %q, %v; want %s", filepath.Base(p), a+6, s.Name, ok, n)
					}
				}
			}
		})
	}
}

// A stripped executable whose names come from a separate debug file still
// names its PLT: the debug file's .plt is NOBITS, so the names come from
// the executable. This is how a Flatpak app with a .Debug extension is
// symbolized.
func TestLoadDebugFileNamesPLT(t *testing.T) {
	bin := testutils.BuildC(t, filepath.Join("testdata", "pltcalls.c"), "-Wl,--build-id=sha1")
	dir := t.TempDir()
	stripped := stripAll(t, bin, filepath.Join(dir, "pltcalls"))
	debug := keepDebug(t, bin, filepath.Join(dir, "pltcalls.debug"))
	obj := openFile(t, stripped)
	debugDir := t.TempDir()
	copyFile(t, debug, buildIDPath(debugDir, obj.BuildID()))
	s, err := (&Loader{DebugDirs: []string{debugDir}}).Load(obj, stripped)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(s.Source(), "build-id:") {
		t.Fatalf("Source = %q, want the debug file", s.Source())
	}
	want := objdumpPLT(t, stripped)
	if len(want) == 0 {
		t.Fatal("objdump names no PLT entry")
	}
	for a, n := range want {
		if sym, ok := s.Lookup(a); !ok || sym.Name != n {
			t.Errorf("Lookup(%#x) = %q, %v; want %s", a, sym.Name, ok, n)
		}
	}
	wantNames(t, s, symAddrs(t, bin), []string{"main"}, nil)
}

// A stripped executable that exports no function has only its PLT names:
// they are its symbols, from "plt", not an error.
func TestSymbolsOnlyPLT(t *testing.T) {
	bin := testutils.BuildC(t, filepath.Join("testdata", "pltcalls.c"))
	stripped := stripAll(t, bin, filepath.Join(t.TempDir(), "pltcalls"))
	f := openFile(t, stripped)
	tab, err := f.Symbols()
	if err != nil {
		t.Fatal(err)
	}
	if f.symsFrom != "plt" {
		t.Errorf("symbols from %q, want plt", f.symsFrom)
	}
	for _, s := range tab.All() {
		if !strings.HasSuffix(s.Name, "@plt") {
			t.Errorf("symbol %s at %#x in a stripped executable", s.Name, s.Addr)
		}
	}
	if want := len(objdumpPLT(t, stripped)); tab.Len() != want {
		t.Errorf("%d symbols, want the %d PLT entries", tab.Len(), want)
	}
}

// jumpSlot decodes the jumps of every PLT flavour and nothing else.
func TestJumpSlot(t *testing.T) {
	for _, c := range []struct {
		name string
		code []byte
		slot uint64
		ok   bool
	}{
		{"plain", []byte{0xff, 0x25, 0xca, 0x2f, 0, 0, 0x68, 0, 0, 0, 0}, 0x1000 + 6 + 0x2fca, true},
		{"bnd", []byte{0xf2, 0xff, 0x25, 0x10, 0, 0, 0, 0x90}, 0x1000 + 7 + 0x10, true},
		{"endbr64 bnd", []byte{0xf3, 0x0f, 0x1e, 0xfa, 0xf2, 0xff, 0x25, 0xf0, 0xff, 0xff, 0xff}, 0x1000 + 11 - 0x10, true},
		{"endbr64", []byte{0xf3, 0x0f, 0x1e, 0xfa, 0xff, 0x25, 4, 0, 0, 0}, 0x1000 + 10 + 4, true},
		{"header push", []byte{0xff, 0x35, 0xca, 0x2f, 0, 0, 0xff, 0x25, 0xcc, 0x2f, 0, 0}, 0, false},
		{"lazy stub", []byte{0xf3, 0x0f, 0x1e, 0xfa, 0x68, 0, 0, 0, 0, 0xf2, 0xe9}, 0, false},
		{"short", []byte{0xff, 0x25, 0, 0, 0}, 0, false},
		{"empty", nil, 0, false},
		{"only bnd", []byte{0xf2}, 0, false},
	} {
		slot, ok := jumpSlot(c.code, 0x1000)
		if ok != c.ok || slot != c.slot {
			t.Errorf("%s: jumpSlot = %#x, %v; want %#x, %v", c.name, slot, ok, c.slot, c.ok)
		}
	}
}
