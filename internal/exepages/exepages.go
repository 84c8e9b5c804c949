// Package exepages lets the pages of the running executable that are no
// longer in use leave the process's resident set.
//
// Why: nsprof's binary is large (8 MB of code, 9 MB of read-only data and
// line tables), and the kernel maps the 16 pages around each one a process
// touches in a file mapping (fault-around). Package initialization and
// setting up the command line run code spread over most of the binary, so
// before a command has read anything, 10 MB of the binary were resident
// (against 2 MB for a Go hello world), and a recording held 13 MB of it,
// most of which it never ran again. After [Release] only what runs next
// comes back, a fault for each 64 KiB touched.
//
// The pages stay in the page cache: the process gives up its mappings of
// them, not the file's cached data, which the system keeps or reclaims as
// it does any file's. Only pages the process never wrote are let go (see
// [Release]).
package exepages

import (
	"fmt"

	"nsprof/internal/unix"
	"nsprof/proc"
)

// Release lets the resident pages of the running executable's read-only
// private mappings (its code, read-only data and Go's line tables) leave
// the resident set, and returns how many bytes were resident in them. A
// mapping that holds any page the process wrote (Anonymous or Swap in
// smaps: a dynamic loader's relocations made read-only afterwards, a
// debugger's breakpoint) is left as it is: dropping it would lose what
// was written. Touched again, a page is mapped again from the page cache.
func Release() (uint64, error) {
	major, minor, ino, err := unix.StatDevIno("/proc/self/exe")
	if err != nil {
		return 0, err
	}
	maps, err := proc.ReadSmaps(proc.Self)
	if err != nil {
		return 0, err
	}
	var released uint64
	var first error
	for _, m := range releasable(maps, proc.Dev{Major: major, Minor: minor}, ino) {
		if err := unix.DropRange(m.Start, m.End-m.Start); err != nil {
			if first == nil {
				first = fmt.Errorf("releasing %s %#x-%#x: %w", m.Path, m.Start, m.End, err)
			}
			continue
		}
		released += m.Rss
	}
	return released, first
}

// releasable returns the mappings of maps that Release lets go: those of
// the file dev:ino, private, not writable, with pages resident and none
// that the process wrote.
func releasable(maps []proc.MappingMemory, dev proc.Dev, ino uint64) []proc.MappingMemory {
	var out []proc.MappingMemory
	for _, m := range maps {
		switch {
		case m.Dev != dev || m.Inode != ino || m.Inode == 0:
		case m.Perms&(proc.PermWrite|proc.PermShared) != 0:
		case m.Anonymous != 0 || m.Swap != 0:
		case m.Rss == 0:
		default:
			out = append(out, m)
		}
	}
	return out
}
