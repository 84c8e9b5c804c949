package symbol

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"nsprof/internal/testutils"
)

// ltoUnits is how many source files the LTO fixture has besides main.c:
// more than maxRebuilds, so that reading each abstract origin's unit on
// its own, as nsprof did, runs out of rebuilds.
const ltoUnits = 40

// buildLTO links main.c and ltoUnits files of one small function each
// with gcc -flto -O2 -g, and returns the binary. main calls every
// function, and link-time optimization inlines them all: the inlined
// calls of main's unit name their functions through DW_FORM_ref_addr
// abstract origins in the unit of each function's source file.
func buildLTO(t *testing.T) string {
	t.Helper()
	gcc, err := exec.LookPath("gcc")
	if err != nil {
		testutils.RequireCI(t, "gcc not found (apt-get install gcc): %v", err)
	}
	dir := t.TempDir()
	var decls, calls strings.Builder
	srcs := []string{filepath.Join(dir, "main.c")}
	for i := range ltoUnits {
		src := filepath.Join(dir, fmt.Sprintf("f%d.c", i))
		code := fmt.Sprintf("int lto_f%d(int x) { return x * %d + (x >> %d); }\n", i, i+3, i%7+1)
		if err := os.WriteFile(src, []byte(code), 0o644); err != nil {
			t.Fatal(err)
		}
		srcs = append(srcs, src)
		fmt.Fprintf(&decls, "int lto_f%d(int);\n", i)
		fmt.Fprintf(&calls, "\ts = lto_f%d(s);\n", i)
	}
	main := decls.String() + "int main(int argc, char **argv) {\n\tvolatile int s = argc;\n" + calls.String() + "\treturn s;\n}\n"
	if err := os.WriteFile(srcs[0], []byte(main), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "lto")
	args := append([]string{"-g", "-O2", "-flto", "-o", bin}, srcs...)
	if out, err := exec.Command(gcc, args...).CombinedOutput(); err != nil {
		t.Fatalf("gcc -flto: %v\n%s", err, out)
	}
	// The fixture is only worth its name if the references do cross
	// units the way Debian's LTO builds' do.
	abbrev := run(t, "readelf", "--debug-dump=abbrev", bin)
	if !strings.Contains(abbrev, "DW_AT_abstract_origin DW_FORM_ref_addr") {
		t.Fatalf("gcc -flto wrote no DW_FORM_ref_addr abstract origin:\n%s", abbrev)
	}
	return bin
}

// ltoMain returns the addresses of main's code in bin.
func ltoMain(t *testing.T, bin string) []uint64 {
	t.Helper()
	a, ok := symAddrs(t, bin)["main"]
	if !ok {
		t.Fatal("no main in the LTO fixture")
	}
	f := openFile(t, bin)
	tab, err := f.Symbols()
	if err != nil {
		t.Fatal(err)
	}
	var addrs []uint64
	for _, s := range tab.All() {
		if s.Name == "main" && s.Addr == a {
			for pc := s.Addr; pc < s.Addr+s.Size; pc++ {
				addrs = append(addrs, pc)
			}
		}
	}
	return addrs
}

// checkLTONames asks s for the frames of main's addresses and checks that
// every inlined call is named, that each function of the fixture is, and
// that the chains are those of binutils' addr2line.
func checkLTONames(t *testing.T, s *Symbols, bin string, addrs []uint64, prepare bool) {
	t.Helper()
	if prepare {
		s.PrepareFrames(addrs)
	}
	want := addr2lineFrames(t, bin, addrs)
	seen := map[string]bool{}
	unnamed, bad := 0, 0
	for i, a := range addrs {
		fr := s.Frames(a)
		for _, f := range fr[:max(len(fr)-1, 0)] {
			if f.Function == "" {
				unnamed++
			}
			seen[f.Function] = true
		}
		var got []string
		for _, f := range fr {
			got = append(got, f.Function)
		}
		var exp []string
		for _, f := range want[i] {
			exp = append(exp, f.Function)
		}
		if !slices.Equal(got, exp) {
			if bad++; bad <= 5 {
				t.Errorf("%#x: functions %q, addr2line %q", a, got, exp)
			}
		}
	}
	if unnamed > 0 {
		t.Errorf("%d inlined frames of main have no name", unnamed)
	}
	var missing []string
	for i := range ltoUnits {
		if n := fmt.Sprintf("lto_f%d", i); !seen[n] {
			missing = append(missing, n)
		}
	}
	if len(missing) > 0 {
		t.Errorf("no frame names %v (of %d functions inlined into main)", missing, ltoUnits)
	}
}

// A program linked with -flto has main's inlined calls named from the
// units of the functions' own source files: all of them, whether their
// units are asked for at once, one address at a time, or after the
// sparse reader has run out of rebuilds.
func TestInlineLTOCrossUnit(t *testing.T) {
	bin := buildLTO(t)
	addrs := ltoMain(t, bin)
	load := func(t *testing.T) *Symbols {
		var l Loader
		s, err := l.Load(openFile(t, bin), bin)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	t.Run("prepared", func(t *testing.T) {
		s := load(t)
		checkLTONames(t, s, bin, addrs, true)
		sp, ok := s.lines.index().units.(*sparseUnits)
		if !ok {
			t.Fatalf("units %T, want the sparse reader: the fixture has .debug_aranges", s.lines.index().units)
		}
		// main's unit, then the units of all the origins at once.
		if sp.rebuilds > 2 {
			t.Errorf(".debug_info made %d times for main's unit and its callees' units, want 2", sp.rebuilds)
		}
	})
	t.Run("one-by-one", func(t *testing.T) {
		checkLTONames(t, load(t), bin, addrs, false)
	})
	t.Run("rebuilds-spent", func(t *testing.T) {
		s := load(t)
		x := s.lines.index()
		sp, ok := x.units.(*sparseUnits)
		if !ok {
			t.Fatalf("units %T, want the sparse reader", x.units)
		}
		s.PrepareFrames(addrs[:1])
		sp.rebuilds = maxRebuilds
		checkLTONames(t, s, bin, addrs, false)
	})
}
