//go:build linux

package container

import (
	"os"
	"testing"
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
