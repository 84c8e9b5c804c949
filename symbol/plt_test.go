package symbol

import (
	"bufio"
	"fmt"
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
	label := regexp.MustCompile(`^([0-9a-f]+) <([^>]+@plt)>:$`)
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
			for _, e := range openFile(t, stripped).pltSymbols(nil) {
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
// names its PLT: the debug file's .plt and relocations are NOBITS, so the
// entries come from the executable, and in a static one the IFUNC names
// from the debug file. This is how a Flatpak app with a .Debug extension
// is symbolized.
func TestLoadDebugFileNamesPLT(t *testing.T) {
	for _, static := range []bool{false, true} {
		t.Run(fmt.Sprintf("static=%v", static), func(t *testing.T) {
			flags := []string{"-Wl,--build-id=sha1"}
			if static {
				flags = append(flags, "-static")
			}
			bin := testutils.BuildC(t, filepath.Join("testdata", "pltcalls.c"), flags...)
			// The names the unstripped executable gives its PLT.
			full, err := openFile(t, bin).Symbols()
			if err != nil {
				t.Fatal(err)
			}
			want := map[uint64]string{}
			for _, s := range full.All() {
				if strings.HasSuffix(s.Name, "@plt") {
					want[s.Addr] = s.Name
				}
			}
			if len(want) < 5 {
				t.Fatalf("%d PLT names in the unstripped executable: %v", len(want), want)
			}
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
			for a, n := range want {
				if sym, ok := s.Lookup(a); !ok || sym.Name != n {
					t.Errorf("Lookup(%#x) = %q, %v; want %s", a, sym.Name, ok, n)
				}
			}
			wantNames(t, s, symAddrs(t, bin), []string{"main"}, nil)
		})
	}
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

// readelfIFUNCs returns the names of the IFUNC symbols of path (in .symtab
// and .dynsym) by address, as readelf -sW prints them.
func readelfIFUNCs(t *testing.T, path string) map[uint64][]string {
	t.Helper()
	m := map[uint64][]string{}
	for _, line := range strings.Split(run(t, "readelf", "-sW", "--dyn-syms", path), "\n") {
		f := strings.Fields(line)
		if len(f) < 8 || f[3] != "IFUNC" {
			continue
		}
		a, err := strconv.ParseUint(f[1], 16, 64)
		if err != nil {
			t.Fatalf("readelf line %q: %v", line, err)
		}
		name, _, _ := strings.Cut(f[7], "@") // memcpy@@GLIBC_2.14
		if !slices.Contains(m[a], name) {
			m[a] = append(m[a], name)
		}
	}
	return m
}

// readelfIrelative returns the addends of the IRELATIVE relocations of
// path by the GOT slot they fill, as readelf -rW prints them.
func readelfIrelative(t *testing.T, path string) map[uint64]uint64 {
	t.Helper()
	m := map[uint64]uint64{}
	for _, line := range strings.Split(run(t, "readelf", "-rW", path), "\n") {
		f := strings.Fields(line)
		if len(f) != 4 || f[2] != "R_X86_64_IRELATIVE" {
			continue
		}
		slot, err1 := strconv.ParseUint(f[0], 16, 64)
		addend, err2 := strconv.ParseUint(f[3], 16, 64)
		if err1 != nil || err2 != nil {
			t.Fatalf("readelf line %q", line)
		}
		m[slot] = addend
	}
	return m
}

// objdumpJumps returns, for each instruction of path's .plt that jumps
// through a GOT slot, the slot by the instruction's address, as objdump -d
// prints it ("jmp *0xa2fe2(%rip)  # 4a4000 <...>").
func objdumpJumps(t *testing.T, path string) map[uint64]uint64 {
	t.Helper()
	jmp := regexp.MustCompile(`^\s*([0-9a-f]+):\s+(?:bnd )?jmp\s+\*0x[0-9a-f]+\(%rip\)\s+# ([0-9a-f]+)`)
	m := map[uint64]uint64{}
	for _, line := range strings.Split(run(t, "objdump", "-d", "--no-show-raw-insn", "-j", ".plt", path), "\n") {
		g := jmp.FindStringSubmatch(line)
		if g == nil {
			continue
		}
		a, err1 := strconv.ParseUint(g[1], 16, 64)
		slot, err2 := strconv.ParseUint(g[2], 16, 64)
		if err1 != nil || err2 != nil {
			t.Fatalf("objdump line %q", line)
		}
		m[a] = slot
	}
	return m
}

// In a static executable the PLT holds only IFUNC entries (memcpy, strlen
// and the like, chosen at start-up), 8 bytes each, filled by IRELATIVE
// relocations; objdump names none of them. Each is named after the IFUNC
// whose resolver its relocation's addend is, by the name callers use.
func TestPLTSymbolsStatic(t *testing.T) {
	bin := testutils.BuildC(t, filepath.Join("testdata", "pltcalls.c"), "-static")
	jumps := objdumpJumps(t, bin)
	irel := readelfIrelative(t, bin)
	ifuncs := readelfIFUNCs(t, bin)
	if len(jumps) == 0 || len(irel) != len(jumps) {
		t.Fatalf("objdump shows %d PLT jumps, readelf %d IRELATIVE relocations", len(jumps), len(irel))
	}
	tab, err := openFile(t, bin).Symbols()
	if err != nil {
		t.Fatal(err)
	}
	for a, slot := range jumps {
		names := ifuncs[irel[slot]]
		if len(names) == 0 {
			t.Fatalf("no IFUNC at %#x, the addend of slot %#x", irel[slot], slot)
		}
		s, ok := tab.Lookup(a + 7)
		name, plt := strings.CutSuffix(s.Name, "@plt")
		if !ok || !plt || !slices.Contains(names, name) || s.Addr != a || s.Size != 8 {
			t.Errorf("Lookup(%#x) = %+v, %v; want 8 bytes at %#x named one of %v@plt", a+7, s, ok, a, names)
		}
	}
	memcpy := 0
	for _, s := range tab.All() {
		if s.Name == "memcpy@plt" {
			memcpy++
		}
		if strings.HasPrefix(s.Name, "__new_memcpy@") {
			t.Errorf("%s at %#x: want the name callers use, memcpy@plt", s.Name, s.Addr)
		}
	}
	if memcpy != 1 {
		t.Errorf("%d memcpy@plt entries, want 1", memcpy)
	}
}

// The C library's own PLT mixes imports (named as objdump names them) with
// IRELATIVE entries for its IFUNCs, which objdump names *ABS*+0xADDR@plt:
// those are named after an IFUNC at ADDR.
func TestPLTSymbolsLibc(t *testing.T) {
	libc := strings.TrimSpace(run(t, "gcc", "-print-file-name=libc.so.6"))
	if !filepath.IsAbs(libc) {
		t.Fatalf("gcc -print-file-name=libc.so.6 = %q", libc)
	}
	want := objdumpPLT(t, libc)
	ifuncs := readelfIFUNCs(t, libc)
	got := map[uint64]string{}
	f := openFile(t, libc)
	tab, err := f.Symbols()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range tab.All() {
		if strings.HasSuffix(s.Name, "@plt") {
			got[s.Addr] = s.Name
		}
	}
	abs := 0
	for a, w := range want {
		if rest, ok := strings.CutPrefix(w, "*ABS*+0x"); ok {
			abs++
			r, err := strconv.ParseUint(strings.TrimSuffix(rest, "@plt"), 16, 64)
			if err != nil {
				t.Fatalf("objdump label %s", w)
			}
			if name, ok := strings.CutSuffix(got[a], "@plt"); !ok || !slices.Contains(ifuncs[r], name) {
				t.Errorf("%#x: %q, want one of %v@plt for objdump's %s", a, got[a], ifuncs[r], w)
			}
		} else if got[a] != w {
			t.Errorf("%#x: %q, want %s as objdump", a, got[a], w)
		}
	}
	if len(got) != len(want) || abs == 0 {
		t.Errorf("%d PLT names, objdump has %d (%d IRELATIVE)", len(got), len(want), abs)
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
