package exepages

import (
	"slices"
	"testing"

	"nsprof/proc"
)

func TestReleasable(t *testing.T) {
	exe := proc.Dev{Major: 0xfe, Minor: 1}
	m := func(start uint64, perms proc.Perms, dev proc.Dev, ino, rss, anon, swap uint64) proc.MappingMemory {
		return proc.MappingMemory{
			Mapping: proc.Mapping{Start: start, End: start + 0x1000, Perms: perms, Dev: dev, Inode: ino, Path: "/x"},
			Rss:     rss, Anonymous: anon, Swap: swap,
		}
	}
	const r, w, x, s = proc.PermRead, proc.PermWrite, proc.PermExec, proc.PermShared
	maps := []proc.MappingMemory{
		m(0x1000, r, exe, 7, 4096, 0, 0),          // read-only data: released
		m(0x2000, r|x, exe, 7, 8192, 0, 0),        // code: released
		m(0x3000, r, exe, 7, 4096, 4096, 0),       // relocated, then read-only: kept
		m(0x4000, r, exe, 7, 4096, 0, 4096),       // written, swapped out: kept
		m(0x5000, r|w, exe, 7, 4096, 0, 0),        // data: kept
		m(0x6000, r|s, exe, 7, 4096, 0, 0),        // shared: kept
		m(0x7000, r|x, exe, 8, 4096, 0, 0),        // another file: kept
		m(0x8000, r|x, proc.Dev{}, 7, 4096, 0, 0), // same inode, another device: kept
		m(0x9000, r|x, exe, 7, 0, 0, 0),           // nothing resident: nothing to do
		m(0xa000, r|x, proc.Dev{}, 0, 4096, 0, 0), // anonymous memory: kept
	}
	var got []uint64
	for _, m := range releasable(maps, exe, 7) {
		got = append(got, m.Start)
	}
	if want := []uint64{0x1000, 0x2000}; !slices.Equal(got, want) {
		t.Errorf("releasable = %#x, want %#x", got, want)
	}
	if got := releasable(maps, exe, 0); len(got) != 0 {
		t.Errorf("inode 0 released %d mappings", len(got))
	}
}
