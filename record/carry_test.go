package record

import (
	"maps"
	"os"
	"slices"
	"testing"

	"nsprof/capture"
)

// TestSymbolizerNextCapture: at a cut, a process gone takes the files only
// it mapped with it; the tables of a file still mapped stay when the
// ending capture sampled it and go when it did not; the sampled addresses
// are forgotten.
func TestSymbolizerNextCapture(t *testing.T) {
	s := newSymbolizer()
	defer s.close()
	hot := &symObj{path: "/hot", loaded: true}
	cold := &symObj{path: "/cold", loaded: true}
	gone := &symObj{path: "/gone", loaded: true}
	s.objs[objKey{path: "/hot"}] = hot
	s.objs[objKey{path: "/cold"}] = cold
	s.objs[objKey{path: "/gone"}] = gone
	live := s.proc(1)
	live.maps = []symMap{{start: 0x1000, end: 0x2000, obj: hot}, {start: 0x3000, end: 0x4000, obj: cold}}
	live.note(0x1100, 5, true, false)
	dead := s.proc(2)
	dead.maps = []symMap{{start: 0x1000, end: 0x2000, obj: gone}}
	dead.note(0x1100, 5, true, false)
	// Each process holds a jitdump: a split recording of JITs coming and
	// going (an agent's) would otherwise keep the descriptors of every
	// one that ever ran, and count them against the files it may open.
	dumps := make([]*os.File, 2)
	for i, p := range []*symProc{live, dead} {
		f, err := os.Open(os.DevNull)
		if err != nil {
			t.Fatal(err)
		}
		dumps[i] = f
		p.jit = []jitDump{{f: f}}
		s.opened++
	}
	opened := s.opened

	s.nextCapture(func(pid int) bool { return pid == 1 }, true)
	if _, ok := s.procs[2]; ok {
		t.Error("process 2, gone, is still followed")
	}
	if _, err := dumps[1].Stat(); err == nil {
		t.Error("the jitdump of process 2, gone, is still open")
	}
	if _, err := dumps[0].Stat(); err != nil {
		t.Errorf("the jitdump of process 1, alive: %v", err)
	}
	if s.opened != opened-1 {
		t.Errorf("%d files counted open after the cut, want %d", s.opened, opened-1)
	}
	if _, ok := s.objs[objKey{path: "/gone"}]; ok {
		t.Error("the file only process 2 mapped is still held")
	}
	if !hot.loaded || cold.loaded {
		t.Errorf("tables kept: sampled file %v, unsampled file %v; want true, false", hot.loaded, cold.loaded)
	}
	if s.procs[1].user.Len() != 0 || len(s.procs[1].packed) != 0 {
		t.Errorf("process 1 keeps %d sampled addresses into the next capture", s.procs[1].user.Len())
	}
	s.nextCapture(func(pid int) bool { return pid == 1 }, true)
	if hot.loaded {
		t.Error("a file no capture sampled since keeps its tables")
	}
}

// TestTrackerNextCapture: at a cut the tracker forgets the processes that
// exited (by an EXIT record) and keeps the live ones and those not
// described yet; one gone from /proc without an EXIT record read is kept
// for one more capture (it may have exited while the cut was made, its
// EXIT record still to be read), and forgotten at the next cut. The next
// capture describes those it keeps again, with their mappings.
func TestTrackerNextCapture(t *testing.T) {
	root := t.TempDir()
	mapping := "00400000-00401000 r-xp 00000000 08:01 42 /bin/live\n"
	fakeProcess(t, root, 10, "live", "/bin/live\x00", mapping)
	fakeProcess(t, root, 11, "exited", "/bin/exited\x00", mapping)
	tr := fakeTracker(t, root)
	for _, pid := range []int{10, 11, 12} {
		tr.get(pid).described = true
		tr.withSamples[pid] = struct{}{}
	}
	tr.procs[10].maps = []capture.Map{{Start: 0x400000, End: 0x401000, Filename: "/bin/live"}}
	tr.procs[10].info = capture.ProcessInfo{PID: 10, Cmdline: []string{"/bin/live"}}
	tr.procs[12].info = capture.ProcessInfo{PID: 12, Cmdline: []string{"/bin/gone"}}
	tr.procs[11].exitAt = 1 // 11 by its EXIT record; 12 gone from /proc
	tr.procs[11].pidns = tr.hostNS + 1
	tr.get(13) // seen in a sample, not described yet
	// Children waiting for parents never described: they are kept while
	// their parent is.
	tr.parentOf[13], tr.parentOf[12] = 99, 99
	followed := func() []int {
		return slices.Sorted(maps.Keys(tr.procs))
	}
	tr.nextCapture()
	if got := followed(); !slices.Equal(got, []int{10, 12, 13}) {
		t.Errorf("processes followed after the first cut: %v, want [10 12 13]", got)
	}
	// The next capture does not describe 11: nothing of it is kept for
	// records read late (an agent would keep it for every process).
	if len(tr.gone) != 0 {
		t.Errorf("kept after the cut for processes forgotten: %v", tr.gone)
	}
	tr.describeLive(100)
	var described []int
	for _, in := range trackerInfos(t, tr) {
		if in.Time != 100 {
			t.Errorf("process %d described at %d, want 100", in.PID, in.Time)
		}
		described = append(described, in.PID)
	}
	if !slices.Equal(described, []int{10, 12}) {
		t.Errorf("process table after the first cut: %v, want [10 12]", described)
	}
	tr.nextCapture()
	if got := followed(); !slices.Equal(got, []int{10, 13}) {
		t.Errorf("processes followed after the second cut: %v, want [10 13]", got)
	}
	if _, ok := tr.parentOf[12]; ok || tr.parentOf[13] != 99 {
		t.Errorf("children waiting for their parent after the second cut: %v, want 13's only", tr.parentOf)
	}
	if n := len(tr.withSamples) + tr.sampledGone; n != 3 {
		t.Errorf("%d sampled processes counted, want 3", n)
	}
}
