package record

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"nsprof/container"
	"nsprof/symbol"
)

// selfBuildID returns the path of the test binary and its GNU build-id
// (Go's linker writes one on Linux).
func selfBuildID(t *testing.T) (string, []byte) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	f, err := symbol.Open(self)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	id := f.BuildID()
	if len(id) == 0 {
		t.Fatalf("%s has no build-id", self)
	}
	return self, id
}

// A process gone before its mapping is looked at: its file is taken from
// the host path only when the build-id matches and anyone may read it.
func TestSymbolizerHostByBuildID(t *testing.T) {
	self, id := selfBuildID(t)
	private := ownerOnlyCopy(t, self)
	for _, tc := range []struct {
		name string
		path string
		id   []byte
		want bool
	}{
		{"same build-id", self, id, true},
		{"other build-id", self, append([]byte{id[0] ^ 0xff}, id[1:]...), false},
		{"no build-id", self, nil, false},
		{"readable by its owner only", private, id, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkGoneMapping(t, container.Mapping{Path: tc.path, Start: 0x1000, End: 0x2000, Inode: 7, BuildID: tc.id}, tc.want, viaHostBuildID)
		})
	}
}

// ownerOnlyCopy copies file name to a new file that only its owner may
// read (mode 0700, as an executable some users may run but not read).
func ownerOnlyCopy(t *testing.T, name string) string {
	t.Helper()
	data, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	private := filepath.Join(t.TempDir(), "private")
	if err := os.WriteFile(private, data, 0o700); err != nil {
		t.Fatal(err)
	}
	return private
}

// TestSymbolizerOneObjectPerFile: a file mapped by one process with the
// build-id the kernel gave (a process started during the recording) and
// by another with only its device and inode (one the /proc scan found),
// in either order, is one object, held open once.
func TestSymbolizerOneObjectPerFile(t *testing.T) {
	self, id := selfBuildID(t)
	st, err := os.Stat(self)
	if err != nil {
		t.Fatal(err)
	}
	sys := st.Sys().(*syscall.Stat_t)
	byInode := container.Mapping{Path: self, Start: 0x1000, End: 0x2000, Dev: uint64(sys.Dev), Inode: sys.Ino}
	byID := container.Mapping{Path: self, Start: 0x1000, End: 0x2000, BuildID: id}
	me, other := os.Getpid(), 1<<22+7 // another, gone
	for _, order := range []string{"inode first", "build-id first"} {
		t.Run(order, func(t *testing.T) {
			s := newSymbolizer()
			s.open = func(pid int) (*container.Process, error) {
				if pid != me {
					return nil, errors.New("no such process")
				}
				return container.Open(pid)
			}
			defer s.close()
			if order == "inode first" {
				s.mapped(me, byInode)
				s.mapped(other, byID)
			} else {
				s.mapped(other, byID)
				s.mapped(me, byInode)
			}
			s.mapped(me, byInode) // found again
			a, b := s.procs[me].maps, s.procs[other].maps
			if len(a) != 2 || len(b) != 1 || a[0].obj != b[0].obj || a[1].obj != a[0].obj {
				t.Fatalf("mappings %d and %d, objects %p %p %p: want one object", len(a), len(b), a[0].obj, a[len(a)-1].obj, b[0].obj)
			}
			if o := a[0].obj; o.f == nil || s.opened != 1 {
				t.Errorf("object opened %v (via %q), %d files open: want one", o.f != nil, o.via, s.opened)
			}
		})
	}
}

// A process gone before its mapping is looked at, whose record has no
// build-id: its file is taken from the host path only when it is the
// file of the record's device and inode and anyone may read it.
func TestSymbolizerHostByInode(t *testing.T) {
	self, _ := selfBuildID(t)
	private := ownerOnlyCopy(t, self)
	ids := func(path string) (uint64, uint64) {
		st, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		sys := st.Sys().(*syscall.Stat_t)
		return uint64(sys.Dev), sys.Ino
	}
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	dev, ino := ids(self)
	pdev, pino := ids(private)
	fdev, fino := ids(fifo)
	for _, tc := range []struct {
		name     string
		path     string
		dev, ino uint64
		want     bool
	}{
		{"same file", self, dev, ino, true},
		{"other inode", self, dev, ino + 1, false},
		{"other device", self, dev + 1, ino, false},
		{"readable by its owner only", private, pdev, pino, false},
		{"a FIFO, not waited on", fifo, fdev, fino, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkGoneMapping(t, container.Mapping{Path: tc.path, Start: 0x1000, End: 0x2000, Dev: tc.dev, Inode: tc.ino}, tc.want, viaHostInode)
		})
	}
}

// checkGoneMapping notes mapping m of a process already gone, and checks
// that its file was opened from the host, via via, when want is set, and
// not otherwise; mapped must not wait (on a FIFO) for 10 s.
func checkGoneMapping(t *testing.T, m container.Mapping, want bool, via string) {
	t.Helper()
	s := newSymbolizer()
	s.open = func(int) (*container.Process, error) { return nil, errors.New("no such process") }
	defer s.close()
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.mapped(42, m)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("mapped still waits after 10 s")
	}
	p := s.procs[42]
	if len(p.maps) != 1 {
		t.Fatalf("%d mappings", len(p.maps))
	}
	o := p.maps[0].obj
	if got := o.f != nil; got != want {
		t.Fatalf("opened = %v (via %q), want %v", got, o.via, want)
	}
	if want && o.via != via {
		t.Errorf("via %q, want %q", o.via, via)
	}
}
