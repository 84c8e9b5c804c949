package outfile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"nsprof/internal/testutils"
	"nsprof/internal/unix"
)

// victim is a file that outputs must never write to: the target of links
// planted at an output's name.
func victim(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "victim")
	if err := os.WriteFile(p, []byte("victim\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func checkContent(t *testing.T, path, want string) {
	t.Helper()
	if b, err := os.ReadFile(path); err != nil || string(b) != want {
		t.Errorf("%s = %q, %v; want %q", path, b, err, want)
	}
}

func write(t *testing.T, path string, opts Options, data string) error {
	t.Helper()
	f, err := Create(path, opts)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(data); err != nil {
		t.Fatal(err)
	}
	return f.Close()
}

func TestCreateRefusesExisting(t *testing.T) {
	dir := t.TempDir()
	v := victim(t)
	regular := filepath.Join(dir, "regular")
	os.WriteFile(regular, []byte("old"), 0o644)
	link := filepath.Join(dir, "link")
	os.Symlink(v, link)
	dangling := filepath.Join(dir, "dangling")
	os.Symlink(filepath.Join(dir, "nowhere"), dangling)
	for _, p := range []string{regular, link, dangling, dir} {
		if err := write(t, p, Options{}, "new"); !errors.Is(err, fs.ErrExist) {
			t.Errorf("%s: %v, want an error wrapping fs.ErrExist", p, err)
		}
	}
	checkContent(t, regular, "old")
	checkContent(t, v, "victim\n")
	if _, err := os.Lstat(filepath.Join(dir, "nowhere")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the dangling link's target was created: %v", err)
	}
	if err := write(t, filepath.Join(dir, "new"), Options{Perm: 0o600}, "new"); err != nil {
		t.Fatal(err)
	}
	checkContent(t, filepath.Join(dir, "new"), "new")
	if st, _ := os.Stat(filepath.Join(dir, "new")); st.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", st.Mode())
	}
}

func TestReplaceRefusesLinksAndSpecialFiles(t *testing.T) {
	dir := t.TempDir()
	v := victim(t)
	link := filepath.Join(dir, "link")
	os.Symlink(v, link)
	dangling := filepath.Join(dir, "dangling")
	os.Symlink(filepath.Join(dir, "nowhere"), dangling)
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o666); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{link, dangling, fifo, dir} {
		if err := write(t, p, Options{Replace: true}, "new"); err == nil {
			t.Errorf("%s replaced", p)
		} else {
			t.Log(err)
		}
	}
	checkContent(t, v, "victim\n")
	if st, err := os.Lstat(link); err != nil || st.Mode()&fs.ModeSymlink == 0 {
		t.Errorf("the link was replaced: %v %v", st, err)
	}
	if _, err := os.Lstat(filepath.Join(dir, "nowhere")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the dangling link's target was created: %v", err)
	}
	checkLeftovers(t, dir, 3)
}

// checkLeftovers fails if dir holds other than n entries (a temporary
// file left behind).
func checkLeftovers(t *testing.T, dir string, n int) {
	t.Helper()
	ents, _ := os.ReadDir(dir)
	if len(ents) != n {
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		t.Errorf("%s holds %q, want %d entries", dir, names, n)
	}
}

// TestReplaceHardLink replaces a name that is a hard link to another file:
// the other name keeps its contents.
func TestReplaceHardLink(t *testing.T) {
	dir := t.TempDir()
	v := filepath.Join(dir, "victim")
	os.WriteFile(v, []byte("victim\n"), 0o644)
	out := filepath.Join(dir, "out")
	if err := os.Link(v, out); err != nil {
		t.Fatal(err)
	}
	f, err := Create(out, Options{Replace: true})
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("new")
	checkContent(t, out, "victim\n") // not replaced before Close
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	checkContent(t, out, "new")
	checkContent(t, v, "victim\n")
	checkLeftovers(t, dir, 2)
}

func TestDiscard(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	f, err := Create(out, Options{})
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("partial")
	f.Discard()
	f.Discard()
	if err := f.Close(); err != nil {
		t.Errorf("Close after Discard: %v", err)
	}
	checkLeftovers(t, dir, 0)

	os.WriteFile(out, []byte("old"), 0o644)
	f, err = Create(out, Options{Replace: true})
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("partial")
	f.Discard()
	checkContent(t, out, "old")
	checkLeftovers(t, dir, 1)

	// A file put at the name after Create is not Discard's to remove.
	os.Remove(out)
	f, err = Create(out, Options{})
	if err != nil {
		t.Fatal(err)
	}
	os.Remove(out)
	os.WriteFile(out, []byte("someone else's"), 0o644)
	f.Discard()
	checkContent(t, out, "someone else's")
}

// TestReplaceInStickyDir is root writing to a name another user planted
// in a sticky, world-writable directory such as /tmp: a symbolic link to
// a root-owned file is refused, and a file of theirs is replaced by one
// of root's rather than written through.
func TestReplaceInStickyDir(t *testing.T) {
	testutils.RequireRoot(t, "planting files owned by another user needs root")
	const nobody = 65534
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o1777); err != nil {
		t.Fatal(err)
	}
	v := victim(t)
	link := filepath.Join(dir, "x.syscap")
	os.Symlink(v, link)
	if err := os.Lchown(link, nobody, nobody); err != nil {
		t.Fatal(err)
	}
	if err := write(t, link, Options{Replace: true}, "capture"); err == nil {
		t.Error("replaced a link planted by another user")
	}
	checkContent(t, v, "victim\n")

	theirs := filepath.Join(dir, "y.syscap")
	os.WriteFile(theirs, []byte("theirs"), 0o666)
	os.Chown(theirs, nobody, nobody)
	if err := write(t, theirs, Options{Replace: true, Perm: 0o640}, "capture"); err != nil {
		t.Fatal(err)
	}
	checkContent(t, theirs, "capture")
	st, err := os.Lstat(theirs)
	if err != nil {
		t.Fatal(err)
	}
	if sys := st.Sys().(*syscall.Stat_t); sys.Uid != 0 || st.Mode().Perm()&0o007 != 0 {
		t.Errorf("%s: uid %d, mode %v: want root's file, not readable by others", theirs, sys.Uid, st.Mode())
	}
}

// TestReplaceDoesNotFlush replaces a file on ext4 and checks that the new
// file's data is still delayed-allocated afterwards: rename(2) over an
// existing file makes ext4 write back every dirty page of the new one
// before it returns (auto_da_alloc), which cost `record --memprof -f` 1.5
// to 2.8 s of a 900 MB capture. Skipped where the temporary directory's
// file system does not delay allocation.
func TestReplaceDoesNotFlush(t *testing.T) {
	path := filepath.Join(t.TempDir(), "capture")
	data := make([]byte, 4<<20)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := Create(path, Options{Replace: true})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Discard()
	if _, err := f.Write(data); err != nil {
		t.Fatal(err)
	}
	delalloc, known, err := unix.Delalloc(f.File)
	if err != nil {
		t.Fatal(err)
	}
	if !known || !delalloc {
		testutils.RequireCI(t, "the file system of %s does not delay allocation (FIEMAP known %t, delalloc %t): the test needs ext4 (or another delayed-allocation file system) for its temporary directory", path, known, delalloc)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	g, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	if delalloc, _, err := unix.Delalloc(g); err != nil || !delalloc {
		t.Errorf("after replacing %s its data has disk blocks (delalloc %t, %v): the replace flushed it", path, delalloc, err)
	}
	if ents, _ := os.ReadDir(filepath.Dir(path)); len(ents) != 1 {
		t.Errorf("%d files left beside the output, want none", len(ents)-1)
	}
}

// TestReplaceRefusesWhatAppearedSinceCreate puts a directory at the path
// between Create and Close: Close swaps the names, finds no regular file,
// swaps them back and fails, leaving the directory and no temporary file.
func TestReplaceRefusesWhatAppearedSinceCreate(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "out")
	if err := os.WriteFile(path, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := Create(path, Options{Replace: true})
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("new")
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(path, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err == nil {
		t.Fatalf("Close replaced the directory at %s", path)
	}
	if st, err := os.Lstat(path); err != nil || !st.IsDir() {
		t.Errorf("%s is no longer the directory: %v, %v", path, st, err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("%d entries in %s, want the directory alone", len(ents), dir)
	}
}

// TestNullDevice writes to the null device, by any name, with or without
// Replace, and leaves it as it was; other devices and a link to the null
// device stay refused.
func TestNullDevice(t *testing.T) {
	isNull := func(p string) bool {
		st, err := os.Lstat(p)
		return err == nil && unix.IsNullDevice(st)
	}
	if !isNull("/dev/null") {
		testutils.RequireCI(t, "/dev/null is not the null device here")
	}
	dir := t.TempDir()
	paths := []string{"/dev/null"}
	if os.Geteuid() == 0 {
		// The same device by another name, in a directory of ours.
		other := filepath.Join(dir, "sink")
		if err := syscall.Mknod(other, syscall.S_IFCHR|0o666, 1<<8|3); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, other)
	}
	for _, p := range paths {
		for _, replace := range []bool{false, true} {
			if err := write(t, p, Options{Replace: replace}, "new"); err != nil {
				t.Errorf("%s (replace %v): %v", p, replace, err)
			}
			f, err := Create(p, Options{Replace: replace})
			if err != nil {
				t.Fatal(err)
			}
			f.Discard()
			if !isNull(p) {
				t.Fatalf("%s is no longer the null device", p)
			}
		}
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink("/dev/null", link); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"/dev/zero", "/dev/full", link} {
		if err := write(t, p, Options{Replace: true}, "new"); err == nil {
			t.Errorf("%s written to", p)
		}
	}
	if st, err := os.Lstat(link); err != nil || st.Mode()&fs.ModeSymlink == 0 {
		t.Errorf("the link was replaced: %v %v", st, err)
	}
}
