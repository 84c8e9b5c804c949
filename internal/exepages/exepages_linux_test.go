package exepages

import (
	"testing"

	"nsprof/internal/unix"
	"nsprof/proc"
)

// exeResident returns the resident bytes of the test binary's mappings.
func exeResident(t *testing.T) uint64 {
	t.Helper()
	major, minor, ino, err := unix.StatDevIno("/proc/self/exe")
	if err != nil {
		t.Fatal(err)
	}
	maps, err := proc.ReadSmaps(proc.Self)
	if err != nil {
		t.Fatal(err)
	}
	var rss uint64
	for _, m := range maps {
		if m.Dev == (proc.Dev{Major: major, Minor: minor}) && m.Inode == ino {
			rss += m.Rss
		}
	}
	return rss
}

// TestRelease lets the test binary's own pages go: its resident part
// shrinks, and the code it runs afterwards (reading smaps again, this
// test) is mapped back as it runs.
func TestRelease(t *testing.T) {
	before := exeResident(t)
	released, err := Release()
	if err != nil {
		t.Fatal(err)
	}
	after := exeResident(t)
	t.Logf("executable resident: %d kB before, %d kB released, %d kB after", before>>10, released>>10, after>>10)
	if released == 0 || released > before {
		t.Errorf("released %d bytes of %d resident", released, before)
	}
	if after >= before {
		t.Errorf("resident %d bytes after Release, %d before", after, before)
	}
}
