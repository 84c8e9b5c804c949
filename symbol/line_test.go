package symbol

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fixtureLine returns the 1-based line of testdata/fixture.c that holds
// text.
func fixtureLine(t *testing.T, text string) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "fixture.c"))
	if err != nil {
		t.Fatal(err)
	}
	for i, l := range strings.Split(string(b), "\n") {
		if strings.Contains(l, text) {
			return i + 1
		}
	}
	t.Fatalf("fixture.c has no %q", text)
	return 0
}

func TestLine(t *testing.T) {
	dir := t.TempDir()
	debugDir := t.TempDir()
	lib, stripped, debug := strippedWithDebug(t, dir, false)
	addrs := symAddrs(t, lib)
	// GCC puts a function's first instruction on the line of its
	// opening brace, the line after the declarator.
	want := fixtureLine(t, "NOINLINE int fixture_leaf(int x)") + 1

	check := func(name string, s *Symbols) {
		t.Helper()
		file, line, ok := s.Line(addrs["fixture_leaf"])
		if !ok || filepath.Base(file) != "fixture.c" || line != want {
			t.Errorf("%s: Line(fixture_leaf) = %s:%d, %v; want fixture.c:%d", name, file, line, ok, want)
		}
		if _, _, ok := s.Line(1); ok {
			t.Errorf("%s: Line(1) found a line", name)
		}
	}
	l := &Loader{DebugDirs: []string{debugDir}}
	s, err := l.Load(openFile(t, lib), lib)
	if err != nil {
		t.Fatal(err)
	}
	check("own DWARF", s)

	obj := openFile(t, stripped)
	s, err = l.Load(obj, stripped)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, ok := s.Line(addrs["fixture_leaf"]); ok {
		t.Error("stripped, no debug file: Line found a line")
	}
	copyFile(t, debug, buildIDPath(debugDir, obj.BuildID()))
	s, err = l.Load(obj, stripped)
	if err != nil {
		t.Fatal(err)
	}
	check("debug file", s)
}

// TestLinesUnread: symbols whose own DWARF cannot be opened again for its
// lines (the file deleted, or another at its path by then) say so, and
// symbols read whole do not.
func TestLinesUnread(t *testing.T) {
	dir := t.TempDir()
	lib, _, _ := strippedWithDebug(t, dir, false)
	addrs := symAddrs(t, lib)
	for _, tc := range []struct {
		name   string
		roots  []Opener
		unread bool
	}{
		{"reopened", []Opener{HostOpener}, false},
		{"gone", []Opener{RootOpener(t.TempDir())}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := &Loader{Roots: tc.roots, DebugDirs: []string{t.TempDir()}}
			s, err := l.Load(openFile(t, lib), lib)
			if err != nil {
				t.Fatal(err)
			}
			if s.LinesUnread() {
				t.Error("unread before any line was asked for")
			}
			_, _, ok := s.Line(addrs["fixture_leaf"])
			if ok == tc.unread || s.LinesUnread() != tc.unread {
				t.Errorf("Line found %v, LinesUnread %v; want %v, %v", ok, s.LinesUnread(), !tc.unread, tc.unread)
			}
		})
	}
}
