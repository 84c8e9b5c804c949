package symbol

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"nsprof/internal/testutils"
)

// dwzHeader is a header two programs share: a function inlined into a
// static one of each, whose DIEs dwz -m moves into the supplementary
// file, the inlined calls' abstract origins then referring there.
const dwzHeader = `static volatile unsigned long dwz_sink;
static inline __attribute__((always_inline)) void dwz_inlined_kernel(int n) { for (int i = 0; i < n; i++) dwz_sink += (unsigned long)i * i; }
__attribute__((noinline)) static void dwz_outer(int n) { dwz_inlined_kernel(n); }
`

// buildDWZ builds the dwz fixture in dir: two programs including
// dwzHeader, program a stripped with a .gnu_debuglink to its debug file,
// which refers into dir/common.debug for its inlined calls' functions;
// with dwarf5, through DWARF 5's links instead of GNU's.
func buildDWZ(t *testing.T, dir string, dwarf5 bool) testutils.DWZFixture {
	t.Helper()
	return testutils.BuildDWZ(t, dir, testutils.DWZOptions{
		Header: dwzHeader,
		MainA:  "int main(int argc, char **argv) { dwz_outer(1000 + argc); return 0; }\n",
		MainB:  "int helper_b(int n) { dwz_outer(n); return n; }\nint main(int argc, char **argv) { return helper_b(argc) == 0; }\n",
		Common: filepath.Join(dir, "common.debug"),
		DWARF5: dwarf5,
	})
}

// dwzInlined returns the names of the innermost frames at the addresses
// of dwz_outer in syms, and how many of those are inlined frames without
// a name.
func dwzInlined(t *testing.T, fx testutils.DWZFixture, syms *Symbols) (names map[string]bool, unnamed int) {
	t.Helper()
	f := openFile(t, fx.Debug)
	tab, err := f.Symbols()
	if err != nil {
		t.Fatal(err)
	}
	names = map[string]bool{}
	found := false
	for _, s := range tab.All() {
		if !strings.HasPrefix(s.Name, "dwz_outer") {
			continue
		}
		found = true
		for pc := s.Addr; pc < s.Addr+s.Size; pc++ {
			fr := syms.Frames(pc)
			for i, x := range fr {
				if i < len(fr)-1 && x.Function == "" {
					unnamed++
				}
			}
			if len(fr) > 1 {
				names[fr[0].Function] = true
			}
		}
	}
	if !found {
		t.Fatal("no dwz_outer in the fixture's symbols")
	}
	return names, unnamed
}

// The inlined calls of a debug file dwz -m made name their functions
// from the supplementary file: found at the path its .gnu_debugaltlink
// gives, or by its build-id in a debug directory. Without it (or with
// another build at the path) they stay unnamed, and the lines count as
// unread, so that no cache keeps them so.
func TestDWZInlinedNames(t *testing.T) {
	for _, dwarf5 := range []bool{false, true} {
		name := "GNU"
		if dwarf5 {
			name = "DWARF5"
		}
		t.Run(name, func(t *testing.T) { testDWZInlinedNames(t, dwarf5) })
	}
}

func testDWZInlinedNames(t *testing.T, dwarf5 bool) {
	dir := t.TempDir()
	fx := buildDWZ(t, dir, dwarf5)
	load := func(l *Loader) *Symbols {
		t.Helper()
		syms, err := l.Load(openFile(t, fx.Bin), fx.Bin)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(syms.Source(), "debuglink:") {
			t.Fatalf("symbols from %q, want the debug link", syms.Source())
		}
		return syms
	}
	check := func(name string, syms *Symbols, named bool) {
		t.Helper()
		names, unnamed := dwzInlined(t, fx, syms)
		switch {
		case named && (!names["dwz_inlined_kernel"] || unnamed > 0):
			t.Errorf("%s: innermost functions %v, %d inlined frames unnamed; want dwz_inlined_kernel, none unnamed", name, names, unnamed)
		case named && syms.LinesUnread():
			t.Errorf("%s: lines unread", name)
		case !named && (names["dwz_inlined_kernel"] || unnamed == 0 || !syms.LinesUnread()):
			t.Errorf("%s: innermost functions %v, %d inlined frames unnamed, lines unread %v; want none named, lines unread", name, names, unnamed, syms.LinesUnread())
		}
	}
	first, second := load(&Loader{}), load(&Loader{})
	check("at the link's path", first, true)
	check("at the link's path, again", second, true)
	if first.lines.alt != second.lines.alt {
		t.Error("the supplementary file was read twice, not shared")
	}
	if !first.LinksOtherFiles() {
		t.Error("the debug file's DWARF does not refer to other files")
	}
	// What no symbols hold any more is read again: the checks below find
	// the file, or not, as they say.
	first, second = nil, nil
	runtime.GC()

	if dwarf5 {
		// dwz -5's supplementary file has no build-id note: it is found
		// at the link's path only.
		if err := os.Remove(fx.Common); err != nil {
			t.Fatal(err)
		}
	} else {
		// Moved: found by build-id in a debug directory.
		debugDir := filepath.Join(dir, "debugdir")
		idPath := buildIDPath(debugDir, openFile(t, fx.Common).BuildID())
		if err := os.MkdirAll(filepath.Dir(idPath), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(fx.Common, idPath); err != nil {
			t.Fatal(err)
		}
		check("by build-id", load(&Loader{DebugDirs: []string{debugDir}}), true)
		runtime.GC()
	}
	check("nowhere", load(&Loader{}), false)

	// Another build at the link's path is refused.
	other := buildDWZ(t, t.TempDir(), dwarf5)
	if err := os.Rename(other.Common, fx.Common); err != nil {
		t.Fatal(err)
	}
	check("another build at the path", load(&Loader{}), false)
}

// FuzzAltLink parses arbitrary .gnu_debugaltlink and .debug_sup
// contents: no panic, and what a link gives lies in its bytes.
func FuzzAltLink(f *testing.F) {
	f.Add([]byte("/usr/lib/debug/.dwz/x86_64-linux-gnu/libc6.debug\x00\x01\x02\x03\x04"))
	f.Add([]byte("\x05\x00\x00/tmp/common.debug\x00\x04\x01\x02\x03\x04"))
	f.Add([]byte("\x05\x00\x01\x00\x02\xab\xcd"))
	f.Fuzz(func(t *testing.T, b []byte) {
		check := func(what string, l altLink) {
			if len(l.name)+len(l.buildID) > len(b) {
				t.Fatalf("%s: name %q and build-id %x from %d bytes", what, l.name, l.buildID, len(b))
			}
		}
		if l, ok := parseGNUAltLink(b); ok {
			if l.name == "" {
				t.Fatal("a GNU link without a name")
			}
			check("GNU", l)
		}
		for _, order := range []binary.ByteOrder{binary.LittleEndian, binary.BigEndian} {
			if l, sup, ok := parseDebugSup(b, order); ok {
				if !sup && l.name == "" {
					t.Fatal("a .debug_sup link without a name")
				}
				check(".debug_sup", l)
			}
		}
	})
}

// A debug file that debuginfod serves gets its supplementary file from
// the server too (by the link's build-id), when no local file has it.
func TestDWZDebuginfod(t *testing.T) {
	dir := t.TempDir()
	fx := buildDWZ(t, dir, false)
	served := t.TempDir()
	copyFile(t, fx.Debug, filepath.Join(served, "a.debug"))
	copyFile(t, fx.Common, filepath.Join(served, "common.debug"))
	common := openFile(t, fx.Common).BuildID()
	if err := os.Remove(fx.Common); err != nil {
		t.Fatal(err)
	}
	url, _ := testutils.StartDebuginfod(t, served, openFile(t, fx.Debug).BuildID())
	// The server scans the directory in its own order: the debug file
	// served says nothing of the supplementary file.
	testutils.WaitDebuginfod(t, url, common)
	l := &Loader{
		Roots:      []Opener{RootOpener(t.TempDir())}, // nothing local
		Debuginfod: &Debuginfod{URLs: []string{url}, CacheDir: t.TempDir(), Timeout: 30 * time.Second},
	}
	syms, err := l.Load(openFile(t, fx.Bin), fx.Bin)
	if err != nil {
		t.Fatal(err)
	}
	if syms.Source() != SourceDebuginfod {
		t.Fatalf("symbols from %q, want debuginfod", syms.Source())
	}
	if names, unnamed := dwzInlined(t, fx, syms); !names["dwz_inlined_kernel"] || unnamed > 0 || syms.LinesUnread() {
		t.Errorf("innermost functions %v, %d inlined frames unnamed, lines unread %v; want dwz_inlined_kernel, none unnamed", names, unnamed, syms.LinesUnread())
	}
}
