package analyze

import (
	"compress/gzip"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

func TestKallsyms(t *testing.T) {
	k, err := NewKallsymsSymbolizer([]byte(testKallsyms))
	if err != nil {
		t.Fatal(err)
	}
	if k.Len() != 4 {
		t.Errorf("%d text symbols, want 4 (t and T lines with non-zero addresses, aliases once)", k.Len())
	}
	for _, tc := range []struct {
		addr     uint64
		kernel   bool
		name     string
		dso      string
		resolved bool
	}{
		{kBase, true, "_stext", "[kernel]", true},
		{kBase + 0x100, true, "sys_read", "[kernel]", true}, // first of two aliases
		{kBase + 0x1ff, true, "sys_read", "[kernel]", true},
		{kBase + 0x300, true, "helper", "[kernel]", true}, // data symbols are not boundaries
		{0xffffffffc0000042, true, "modfn", "[ext4]", true},
		{kBase - 1, true, "", "", false},
		{kBase + 0x200 + 1<<20, true, "", "", false},
		{kBase + 0x100, false, "", "", false}, // user addresses are not kallsyms'
	} {
		loc, ok := k.Symbolize(1, tc.addr, tc.kernel)
		if ok != tc.resolved || loc.Function != tc.name || loc.DSO != tc.dso {
			t.Errorf("%#x: %+v %t, want %s %s %t", tc.addr, loc, ok, tc.name, tc.dso, tc.resolved)
		}
	}
	if _, err := NewKallsymsSymbolizer([]byte("0000000000000000 T _stext\n0000000000000000 t x\n")); !errors.Is(err, ErrRestrictedKallsyms) {
		t.Errorf("zero addresses: %v", err)
	}
	if _, err := NewKallsymsSymbolizer([]byte("garbage\n\n")); err == nil {
		t.Error("no symbols: no error")
	}
}

// TestSysprofCLICapture loads a capture recorded by Sysprof 3.46's
// sysprof-cli (callchain fixture, 0.3 s, one worker thread, no fork) with
// its own __symbols__ bundle: the fixture's known call chain is found by
// name.
func TestSysprofCLICapture(t *testing.T) {
	p := loadTestdata(t, "sysprof-cli-3.46-callchain.syscap.gz", LoadOptions{})
	if p.Bundle == nil || p.SymbolStats["bundle"] == 0 {
		t.Fatalf("bundle not used: %v", p.SymbolStats)
	}
	samples, err := p.Select(Filter{Comm: "callchain"})
	if err != nil {
		t.Fatal(err)
	}
	if len(samples) < 50 {
		t.Fatalf("%d samples of the fixture", len(samples))
	}
	top := p.Top(samples)
	if top[0].Name != "fixture_leaf" || top[0].DSO != "callchain" || top[0].SelfPercent < 50 {
		t.Errorf("top function %+v, want fixture_leaf in callchain (DSO from the MAP, the bundle has no tag)", top[0])
	}
	want := []string{"fixture_outer", "fixture_middle", "fixture_inner", "fixture_leaf"}
	found := false
	p.Tree(samples, TreeOptions{}).Walk(func(n *Node, _ int) bool {
		if n.Name == "fixture_outer" {
			var chain []string
			for c := n; c != nil; {
				chain = append(chain, c.Name)
				if len(c.Children) == 0 {
					break
				}
				c = c.Children[0]
			}
			found = found || len(chain) >= 4 && slices.Equal(chain[:4], want)
		}
		return true
	})
	if !found {
		t.Errorf("no top-down path %v", want)
	}
}

// TestSysprofCLIJunk: the sysprof-cli capture's frame-pointer walks end
// in values read past the outermost frame (0x1, 0x7207, 0xfe00, stack
// pointers); none of them is left as a root, no name is Sysprof's "In
// file" placeholder, and a library has one DSO name, its file's, not
// Sysprof's nickname beside it (libc.so.6, never "libc").
func TestSysprofCLIJunk(t *testing.T) {
	for _, name := range []string{"sysprof-cli-3.46-callchain.syscap.gz", "sysprof-cli-3.46-gtk4.syscap.gz"} {
		t.Run(name, func(t *testing.T) { testSysprofCLIJunk(t, name) })
	}
}

func testSysprofCLIJunk(t *testing.T, name string) {
	// One function per unnamed address: the roots' addresses are checked.
	p := loadTestdata(t, name, LoadOptions{NoHostFiles: true, Addresses: true})
	roots := map[string]int{}
	for _, n := range p.Tree(p.Samples, TreeOptions{}).Children {
		roots[n.Name] = n.Total
	}
	for i := range p.Frames {
		fr := &p.Frames[i]
		if fr.Kernel {
			continue
		}
		if strings.HasPrefix(fr.Loc.Function, "In file") || strings.HasSuffix(fr.Loc.Function, ": inode mismatch") {
			t.Errorf("frame %#x of pid %d named %q", fr.Addr, fr.PID, fr.Loc.Function)
		}
	}
	for name := range roots {
		if strings.HasPrefix(name, "[unknown] 0x") {
			a, err := strconv.ParseUint(strings.TrimPrefix(name, "[unknown] 0x"), 16, 64)
			if err == nil && (a < minCodeAddr || p.Mapping(0, a) == nil) {
				t.Errorf("root %q (%d samples): a value past the outermost frame", name, roots[name])
			}
		}
	}
	dsos := map[string]bool{}
	for _, fn := range p.Funcs {
		dsos[fn.DSO] = true
	}
	if dsos["libc"] || !dsos["libc.so.6"] {
		t.Errorf("DSOs %v: want libc.so.6 and no nickname libc", dsos)
	}
}

// loadTestdata loads the gzipped capture testdata/name.
func loadTestdata(t *testing.T, name string, o LoadOptions) *Profile {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	p, err := Load(zr, o)
	if err != nil {
		t.Fatal(err)
	}
	return p
}
