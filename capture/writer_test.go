package capture

import (
	"os"
	"path/filepath"
	"testing"
)

// TestCreateDoesNotFollowLinks: Create refuses a symbolic link at its path
// and replaces a hard link rather than writing through it; either way the
// linked file keeps its contents.
func TestCreateDoesNotFollowLinks(t *testing.T) {
	dir := t.TempDir()
	victim := filepath.Join(dir, "victim")
	if err := os.WriteFile(victim, []byte("victim\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.syscap")
	os.Symlink(victim, link)
	if w, err := Create(link); err == nil {
		w.Close()
		t.Error("Create followed a symbolic link")
	}
	hard := filepath.Join(dir, "hard.syscap")
	if err := os.Link(victim, hard); err != nil {
		t.Fatal(err)
	}
	w, err := Create(hard)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(victim); err != nil || string(b) != "victim\n" {
		t.Errorf("victim = %q, %v", b, err)
	}
	if r, err := Open(hard); err != nil {
		t.Errorf("%s: %v", hard, err)
	} else {
		r.Close()
	}
}
