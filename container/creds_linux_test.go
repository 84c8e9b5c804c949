//go:build linux

package container

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"nsprof/internal/testutils"
	"nsprof/proc"
)

// TestOpenFileReadsCredsOnce: the routes of one open share one read of
// the process's credentials. A file that is nowhere goes through every
// route, four of them as the process.
func TestOpenFileReadsCredsOnce(t *testing.T) {
	p, err := Open(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	before := p.credsReads.Load()
	if f, via, err := p.OpenFile("/nsprof-no-such-dir/no-such-file"); err == nil {
		f.Close()
		t.Fatalf("opened a file that is not there (via %s)", via)
	}
	if n := p.credsReads.Load() - before; n != 1 {
		t.Errorf("one OpenFile read the credentials %d times, want 1", n)
	}
	// Each open reads them again: a process that dropped its rights
	// since is held to its new ones.
	before = p.credsReads.Load()
	for range 2 {
		if f, _, err := p.OpenFile("/nsprof-no-such-dir/no-such-file"); err == nil {
			f.Close()
		}
	}
	if n := p.credsReads.Load() - before; n != 2 {
		t.Errorf("two OpenFile read the credentials %d times, want 2", n)
	}
}

// TestOpenOwnedMapped: a file a process maps for its profiler (a JIT's
// jitdump) is opened only when its user or root owns it, as a perf map
// is; one of another user's is refused with ErrNotOwned.
func TestOpenOwnedMapped(t *testing.T) {
	testutils.RequireRoot(t, "planting a file owned by another user needs root")
	dir := t.TempDir()
	mapFile := func(name string, uid int) Mapping {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, make([]byte, 4096), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(path, uid, uid); err != nil {
			t.Fatal(err)
		}
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		b, err := syscall.Mmap(int(f.Fd()), 0, 4096, syscall.PROT_READ|syscall.PROT_EXEC, syscall.MAP_PRIVATE)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { syscall.Munmap(b) })
		maps, err := proc.ReadMaps(os.Getpid())
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range maps {
			if m.Path == path {
				return MappingFromProc(m)
			}
		}
		t.Fatalf("%s not among this process's mappings", path)
		return Mapping{}
	}
	own := mapFile("jit-1.dump", 0)
	other := mapFile("jit-2.dump", 65534)
	p, err := Open(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	f, _, err := p.OpenOwnedMapped(own)
	if err != nil {
		t.Fatalf("root's file: %v", err)
	}
	f.Close()
	if f, via, err := p.OpenOwnedMapped(other); !errors.Is(err, ErrNotOwned) {
		if err == nil {
			f.Close()
		}
		t.Errorf("another user's file: opened via %q, error %v; want ErrNotOwned", via, err)
	}
}
