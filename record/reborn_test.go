package record

import (
	"errors"
	"testing"
	"time"

	"nsprof/capture"
	"nsprof/container"
)

// TestSymbolizerPIDReused: a process given the pid of one that exited
// (its FORK later than the exit) is a new image of the pid, as after an
// exec: an address both sampled is named from the new process's
// mappings, not the exited one's, whether the exited one was still in
// memory or written out. Its mappings read before its FORK are its own.
func TestSymbolizerPIDReused(t *testing.T) {
	path, id, offs := cachedImage(t)
	const base = 0x400000
	// name returns the name pid's bundle gives address a.
	name := func(syms []capture.Symbol, pid int32, a uint64) string {
		for _, s := range syms {
			if s.PID == pid && a >= s.Begin && a <= s.End {
				return s.Name
			}
		}
		return ""
	}
	// The file mapped at base, and at base with its offsets shifted by
	// shift: two offsets whose functions differ.
	o1, o2 := offs[0], offs[len(offs)-1]
	shift := o2 - o1
	s0 := newSymbolizer()
	s0.open = func(int) (*container.Process, error) { return nil, errors.New("no such process") }
	s0.mapped(5, container.Mapping{Path: path, Start: base, End: base + 1<<20, BuildID: id})
	s0.sampled(5, []uint64{capture.ContextUser, base + o1, base + o2}, true, 1)
	syms0, _ := bundleAll(s0, func() (kernelTable, error) { return fakeKernel{}, nil }, func(int) int { return 0 }, nil, t.Logf)
	s0.close()
	old, young := name(syms0, 5, base+o1), name(syms0, 5, base+o2)
	if old == "" || young == "" || old == young {
		t.Fatalf("offsets %#x and %#x named %q and %q: want two names", o1, o2, old, young)
	}
	for _, spilled := range []bool{false, true} {
		s := newSymbolizer()
		s.open = func(int) (*container.Process, error) { return nil, errors.New("no such process") }
		s.mapped(1, container.Mapping{Path: path, Start: base, End: base + 1<<20, Offset: shift, BuildID: id})
		s.mapped(100, container.Mapping{Path: path, Start: base, End: base + 1<<20, BuildID: id})
		s.sampled(100, []uint64{capture.ContextUser, base + o1}, true, 10)
		s.exited(100, 20)
		if spilled {
			s.packExited(time.Now().Add(packGrace))
			if _, ok := s.procs[100]; ok {
				t.Fatal("the exited process was not written out")
			}
		}
		// The new process maps something of its own, read before its
		// FORK, and samples the address the old one did.
		s.mapped(100, container.Mapping{Path: path, Start: base + 1<<24, End: base + 1<<24 + 1<<20, BuildID: id})
		s.forked(1, 100, 30)
		s.sampled(100, []uint64{capture.ContextUser, base + o1, base + 1<<24 + o2}, true, 40)
		syms, _ := bundleAll(s, func() (kernelTable, error) { return fakeKernel{}, nil }, func(int) int { return 0 }, nil, t.Logf)
		s.close()
		if got := name(syms, 100, base+o1); got != young {
			t.Errorf("spilled %t: the new process's address named %q, want %q (its own mapping's)", spilled, got, young)
		}
		if got := name(syms, 100, base+1<<24+o2); got != young {
			t.Errorf("spilled %t: in the mapping read before its FORK: %q, want %q", spilled, got, young)
		}
	}
}

// TestSymbolizerPIDReusedLeaderExit: a process's EXIT record is its
// leader thread's, and its other threads may run on; their samples,
// before the FORK that gives the pid to a new process, stay the old
// process's.
func TestSymbolizerPIDReusedLeaderExit(t *testing.T) {
	s := newSymbolizer()
	s.open = func(int) (*container.Process, error) { return nil, errors.New("no such process") }
	defer s.close()
	const base = 0x400000
	s.mapped(1, container.Mapping{Path: "/bin/new", Start: base, End: base + 1<<20, Inode: 2})
	s.mapped(100, container.Mapping{Path: "/bin/old", Start: base, End: base + 1<<20, Inode: 3})
	s.exited(100, 20)
	s.sampled(100, []uint64{capture.ContextUser, base + 0x10}, true, 25) // another thread, after the leader's exit
	s.forked(1, 100, 30)
	s.sampled(100, []uint64{capture.ContextUser, base + 0x20}, true, 40)
	p := s.lookup(100)
	if len(p.prev) != 1 || p.prev[0].until != 30 {
		t.Fatalf("images %d, the old one until %v; want 2, until the FORK at 30", len(p.prev)+1, p.prev)
	}
	old := &p.prev[0]
	old.unpack()
	p.unpack()
	if _, ok := old.user.get(base + 0x10); !ok {
		t.Errorf("the old process's sample after its leader's exit is not in its image: %v", old.user)
	}
	if _, ok := p.user.get(base + 0x20); !ok || p.user.Len() != 1 {
		t.Errorf("the new process's image holds %v, want its own sample alone", p.user)
	}
	if len(old.maps) != 1 || old.maps[0].obj.path != "/bin/old" || len(p.maps) != 1 || p.maps[0].obj.path != "/bin/new" {
		t.Errorf("old image maps %v, new %v", old.maps, p.maps)
	}
}
