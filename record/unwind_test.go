package record

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"nsprof/container"
	"nsprof/perf"
	"nsprof/proc"
)

func TestDWARFRingPages(t *testing.T) {
	if os.Getpagesize() != 4096 {
		t.Skip("page size is not 4 KiB")
	}
	for _, c := range []struct{ freq, stack, want int }{
		{1000, 8192, 2048}, // 8 MiB: 0.96 s of samples
		{100, 8192, 512},
		{4000, 65528, 4096},
		{999, 16384, 4096},
	} {
		if got := dwarfRingPages(c.freq, c.stack); got != c.want {
			t.Errorf("%d Hz, %d bytes: %d pages, want %d", c.freq, c.stack, got, c.want)
		}
	}
}

// A process sampled before anything described it is given its own
// mappings, from /proc, when it has some: a container's program, exec'd
// below its runtime's init, runs none of its parent's code, and with its
// parent's mappings the leaf step found no CFI for its samples. Only a
// process /proc shows no mappings of (gone, or exiting) takes its
// parent's, most often the image a short-lived child ran.
func TestProcMapsOwnBeforeParent(t *testing.T) {
	root := t.TempDir()
	const parent, child, zombie = 3999991, 3999992, 3999993
	fakeProcess(t, root, parent, "init", "/init\x00", "55d000000000-55d000001000 r-xp 00001000 fe:00 11 /init\n")
	dir := fakeProcess(t, root, child, "prog", "/prog\x00", "56d000000000-56d000002000 r-xp 00000000 fe:00 12 /prog\n")
	if err := os.WriteFile(filepath.Join(dir, "status"), []byte(fmt.Sprintf("Name:\tprog\nPid:\t%d\nPPid:\t%d\n", child, parent)), 0o644); err != nil {
		t.Fatal(err)
	}
	dir = fakeProcess(t, root, zombie, "quick", "", "")
	if err := os.WriteFile(filepath.Join(dir, "status"), []byte(fmt.Sprintf("Name:\tquick\nPid:\t%d\nPPid:\t%d\n", zombie, parent)), 0o644); err != nil {
		t.Fatal(err)
	}
	sym := newSymbolizer()
	defer sym.close()
	sym.open = func(int) (*container.Process, error) { return nil, errors.New("no process in a fake /proc") }
	sym.mapped(parent, container.Mapping{Path: "/init", Start: 0x55d000000000, End: 0x55d000001000, Offset: 0x1000, Inode: 11})
	u := newDWARFUnwinder(sym, proc.FS{Root: root}, perf.Format{})
	for _, c := range []struct {
		pid  int
		want string
	}{{child, "/prog"}, {zombie, "/init"}} {
		var got []string
		for _, m := range u.procMaps(c.pid).maps {
			got = append(got, m.obj.path)
		}
		if len(got) != 1 || got[0] != c.want {
			t.Errorf("pid %d: mappings of %q, want %q's", c.pid, got, c.want)
		}
	}
}

// The unwinder's mapper remembers the modules it found from one sample
// to the next of the same process, and forgets them when any mapping
// changes or another process's sample comes: an off-CPU recording takes
// a leaf step per context switch, and looking each module and its table
// up again for every sample was a third of the step's time.
func TestUnwindMapperKeepsMemo(t *testing.T) {
	const pid, other = 3999981, 3999982
	sym := newSymbolizer()
	defer sym.close()
	sym.open = func(int) (*container.Process, error) { return nil, errors.New("no process in a fake /proc") }
	sym.mapped(pid, container.Mapping{Path: "/a", Start: 0x1000, End: 0x3000, Inode: 21})
	sym.mapped(other, container.Mapping{Path: "/c", Start: 0x1000, End: 0x3000, Inode: 23})
	u := newDWARFUnwinder(sym, proc.FS{Root: t.TempDir()}, perf.Format{})
	m := &u.mapper
	find := func(pid int, pc uint64, want string) {
		t.Helper()
		m.use(pid, 0)
		if _, ok := m.Find(pc); !ok {
			t.Fatalf("pid %d: no module at %#x", pid, pc)
		}
		// The module found is the memo's entry of pc.
		got := ""
		for _, e := range m.memo[:m.n] {
			if pc >= e.lo && pc < e.hi {
				got = e.m.obj.path
				break
			}
		}
		if got != want {
			t.Errorf("pid %d: %#x found in %q, want %s", pid, pc, got, want)
		}
	}
	steps := []struct {
		pid      int
		pc       uint64
		want     string
		resolved uint64 // in all so far
		change   func()
	}{
		{pid, 0x1100, "/a", 1, nil},
		{pid, 0x1200, "/a", 1, nil}, // the next sample: remembered
		{pid, 0x2200, "/a", 1, nil},
		{other, 0x1100, "/c", 2, nil}, // another process
		{pid, 0x1100, "/a", 3, nil},
		{pid, 0x1100, "/b", 4, func() { // a new mapping over the old
			sym.mapped(pid, container.Mapping{Path: "/b", Start: 0x1000, End: 0x2000, Inode: 22})
		}},
		{pid, 0x1100, "/b", 4, nil},
		{pid, 0x2100, "/a", 5, nil},
		{other, 0x1100, "/c", 6, nil},
		{pid, 0x2100, "/a", 7, nil}, // remembered first, for the part no later mapping covers
		{pid, 0x2f00, "/a", 7, nil},
		{pid, 0x1200, "/b", 8, nil}, // not in the /a remembered
	}
	for i, s := range steps {
		if s.change != nil {
			s.change()
		}
		find(s.pid, s.pc, s.want)
		if m.resolved != s.resolved {
			t.Errorf("step %d (pid %d, %#x): %d lookups the memo did not answer, want %d", i, s.pid, s.pc, m.resolved, s.resolved)
		}
	}
	sym.execed(pid, 1)
	m.use(pid, 0)
	if _, ok := m.Find(0x1100); ok {
		t.Errorf("a module found at %#x after the exec forgot the mappings", 0x1100)
	}
}
