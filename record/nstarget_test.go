package record

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"nsprof/perf"
	"nsprof/proc"
)

// fakeNSProc makes a /proc tree where this process and each of pids have
// a PID namespace (pid -> namespace inode; self is 1) and a task of
// their own.
func fakeNSProc(t *testing.T, pids map[int]uint64) proc.FS {
	t.Helper()
	root := t.TempDir()
	link := func(dir string, ns uint64) {
		if err := os.MkdirAll(filepath.Join(root, dir, "ns"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(fmt.Sprintf("pid:[%d]", ns), filepath.Join(root, dir, "ns", "pid")); err != nil {
			t.Fatal(err)
		}
	}
	link("self", 1)
	for pid, ns := range pids {
		link(fmt.Sprint(pid), ns)
		if err := os.MkdirAll(filepath.Join(root, fmt.Sprint(pid), "task", fmt.Sprint(pid)), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return proc.FS{Root: root}
}

// TestNSTarget: of the records of every task, the filter keeps those of
// the container's processes: those found in it, a child one of them
// forks, and a command podman exec runs (its parent on the host, its
// PID namespace the container's), whose COMM and sample read from
// another CPU's ring before its FORK and NAMESPACES are held, then
// handled in the order of their times; it drops the host's records and
// counts their samples, the held ones once the next snapshot was handled,
// and the container's once they exited.
func TestNSTarget(t *testing.T) {
	fs := fakeNSProc(t, map[int]uint64{500: 9, 7: 1})
	f, ok := newNSTarget(fs, []int{500})
	if !ok {
		t.Fatal("newNSTarget refused a container in a PID namespace of its own")
	}
	var got []string
	handle := func(rec *perf.Record) {
		pid, _ := recordPID(rec)
		got = append(got, fmt.Sprintf("%v %d@%d", rec.Type, pid, recordTime(rec)))
	}
	take := func(rec *perf.Record, snap uint64) {
		f.take(rec, snap, handle)
		f.settleRead(snap, false, handle)
	}
	sample := func(pid uint32, at, snap uint64) {
		take(&perf.Record{Type: perf.RecordSample, Sample: perf.Sample{PID: pid, TID: pid, Time: at, Callchain: []uint64{at}}}, snap)
	}
	fork := func(pid, ppid uint32, at, snap uint64) {
		take(&perf.Record{Type: perf.RecordFork, Task: perf.Task{PID: pid, PPID: ppid, TID: pid, PTID: ppid, Time: at}, ID: perf.SampleID{Time: at}}, snap)
	}
	namespaces := func(pid uint32, ns, at, snap uint64) {
		rec := &perf.Record{Type: perf.RecordNamespaces, Namespaces: perf.Namespaces{PID: pid, TID: pid}, ID: perf.SampleID{Time: at}}
		rec.Namespaces.Links[perf.NamespacePID].Inode = ns
		take(rec, snap)
	}
	comm := func(pid uint32, at, snap uint64) {
		take(&perf.Record{Type: perf.RecordComm, Comm: perf.Comm{PID: pid, TID: pid, Exec: true, Comm: []byte("hot")}, ID: perf.SampleID{Time: at}}, snap)
	}
	expect := func(step string, want ...string) {
		t.Helper()
		if !slices.Equal(got, want) {
			t.Fatalf("%s: handled %q, want %q", step, got, want)
		}
	}

	// Snapshot 1: the container's process and the host's.
	sample(500, 5, 1)
	sample(7, 6, 1)
	expect("snapshot 1", "SAMPLE 500@5")
	if f.dropped != 1 {
		t.Fatalf("dropped %d, want 1 (the host's sample)", f.dropped)
	}
	// The runtime (600) forked on the host, in the host's namespace.
	fork(600, 7, 10, 1)
	namespaces(600, 1, 10, 1)
	sample(600, 11, 1)
	// A child of the container's process (501).
	fork(501, 500, 12, 1)
	sample(501, 13, 1)
	expect("the runtime and a child", "SAMPLE 500@5", "FORK 501@12", "SAMPLE 501@13")
	// Snapshot 2: podman exec's command (700), its exec and a sample
	// read from another CPU's ring before its FORK and NAMESPACES.
	comm(700, 21, 2)
	sample(700, 22, 2)
	sample(8, 23, 2) // a new host process, its creation not read yet
	fork(700, 600, 20, 2)
	namespaces(700, 9, 20, 2)
	expect("podman exec's command", "SAMPLE 500@5", "FORK 501@12", "SAMPLE 501@13",
		"FORK 700@20", "NAMESPACES 700@20", "COMM 700@21", "SAMPLE 700@22")
	if f.dropped != 2 || len(f.held) != 1 {
		t.Fatalf("dropped %d, held %d; want 2 (host, runtime) and 1 (pid 8)", f.dropped, len(f.held))
	}
	// Snapshot 4 handled: what snapshot 2 held and nothing decided is
	// another's.
	f.settleRead(4, false, handle)
	if f.dropped != 3 || len(f.held) != 0 || len(f.heldBy) != 0 {
		t.Fatalf("after snapshot 4: dropped %d, held %d (%d processes); want 3, 0, 0", f.dropped, len(f.held), len(f.heldBy))
	}
	if !f.alive() {
		t.Fatal("the container's processes run, alive says no")
	}
	// The container's processes exit; a sample of pid 500 after its
	// exit (its pid used again by the host) is not the container's.
	for _, pid := range []uint32{500, 501, 700} {
		take(&perf.Record{Type: perf.RecordExit, Task: perf.Task{PID: pid, PPID: 1, TID: pid, PTID: 1, Time: 40}, ID: perf.SampleID{Time: 40}}, 5)
	}
	sample(500, 41, 5)
	f.settleRead(7, true, handle)
	if n := len(got); got[n-1] != "EXIT 700@40" || f.dropped != 4 {
		t.Fatalf("after the exits: handled %q, dropped %d; want the exits last and 4 dropped", got, f.dropped)
	}
	if f.alive() {
		t.Error("the container's processes exited (pid 500's /proc is there still), alive says one runs")
	}
}

// TestNSTargetHostPID: a container sharing the host's PID namespace
// (--pid=host) is not told by it.
func TestNSTargetHostPID(t *testing.T) {
	fs := fakeNSProc(t, map[int]uint64{500: 1})
	if _, ok := newNSTarget(fs, []int{500}); ok {
		t.Error("newNSTarget took the host's PID namespace for the container's")
	}
}

// TestNSTargetNotSample: the host's hits of the per-CPU clone
// tracepoints are dropped but not counted as samples left out, whether
// dropped at once or after being held.
func TestNSTargetNotSample(t *testing.T) {
	fs := fakeNSProc(t, map[int]uint64{500: 9, 7: 1})
	f, ok := newNSTarget(fs, []int{500})
	if !ok {
		t.Fatal("newNSTarget refused a container in a PID namespace of its own")
	}
	f.notSample = func(s *perf.Sample) bool { return len(s.RawData) > 0 }
	var kept int
	handle := func(*perf.Record) { kept++ }
	hit := func(pid uint32, at, snap uint64) {
		f.take(&perf.Record{Type: perf.RecordSample, Sample: perf.Sample{PID: pid, TID: pid, Time: at, RawData: []byte{1, 0, 0, 0}}}, snap, handle)
	}
	hit(7, 1, 1)   // the host's
	hit(800, 2, 1) // a process not known yet: held, then dropped
	hit(500, 3, 1) // the container's
	f.settle(^uint64(0), handle)
	if kept != 1 || f.dropped != 0 {
		t.Errorf("kept %d, dropped %d; want the container's hit kept and none counted", kept, f.dropped)
	}
}

// TestNSTargetReadOrders: whatever order the records of two CPUs' rings
// are read in (a snapshot reads each ring up to its head, the rings one
// after the other in a random order), the filter hands on every record
// of the container's processes, those podman exec adds and those in a
// PID namespace a process of it made included, each
// process's in the order of their times (but for its NAMESPACES record),
// and drops every record of the host's, counting their samples.
func TestNSTargetReadOrders(t *testing.T) {
	type rec struct {
		r   *perf.Record
		cpu int
	}
	for seed := range uint64(200) {
		rng := rand.New(rand.NewPCG(seed, 7))
		fs := fakeNSProc(t, map[int]uint64{500: 9, 7: 1})
		f, ok := newNSTarget(fs, []int{500})
		if !ok {
			t.Fatal("newNSTarget refused the container")
		}
		var recs []rec
		member := map[uint32]bool{500: true}
		samples := map[bool]int{} // by member
		now := uint64(10)
		tick := func() uint64 { now += uint64(1 + rng.IntN(3)); return now }
		add := func(r *perf.Record, cpu int) { recs = append(recs, rec{r, cpu}) }
		sample := func(pid uint32, cpu int) {
			add(&perf.Record{Type: perf.RecordSample, Sample: perf.Sample{PID: pid, TID: pid, Time: tick()}}, cpu)
			samples[member[pid]]++
		}
		sample(500, 0)
		sample(7, 1)
		for pid := uint32(600); pid < 612; pid++ {
			parent, ns := uint32(7), uint64(1) // a host process's child
			switch rng.IntN(4) {
			case 0:
				parent, ns = 500, 9 // the container's child
			case 1:
				parent, ns = 500, 10 // its child in a PID namespace of its own
			case 2:
				ns = 9 // podman exec's: the runtime on the host
			}
			member[pid] = ns != 1
			pcpu, cpu := rng.IntN(2), rng.IntN(2)
			at := tick()
			add(&perf.Record{Type: perf.RecordFork, Task: perf.Task{PID: pid, PPID: parent, TID: pid, PTID: parent, Time: at}, ID: perf.SampleID{Time: at}}, pcpu)
			n := &perf.Record{Type: perf.RecordNamespaces, Namespaces: perf.Namespaces{PID: pid, TID: pid}, ID: perf.SampleID{Time: at}}
			n.Namespaces.Links[perf.NamespacePID].Inode = ns
			add(n, pcpu)
			add(&perf.Record{Type: perf.RecordComm, Comm: perf.Comm{PID: pid, TID: pid, Exec: true}, ID: perf.SampleID{Time: tick()}}, cpu)
			for range 1 + rng.IntN(3) {
				sample(pid, cpu)
			}
			end := tick()
			add(&perf.Record{Type: perf.RecordExit, Task: perf.Task{PID: pid, PPID: parent, TID: pid, PTID: parent, Time: end}, ID: perf.SampleID{Time: end}}, cpu)
		}
		// The rings, each in time order.
		rings := [2][]*perf.Record{}
		for _, r := range recs {
			rings[r.cpu] = append(rings[r.cpu], r.r)
		}
		last := map[uint32]int64{}
		kept := map[bool]int{}
		handle := func(r *perf.Record) {
			pid, _ := recordPID(r)
			if !member[uint32(pid)] {
				t.Fatalf("seed %d: handed on %v of the host's process %d", seed, r.Type, pid)
			}
			// A NAMESPACES record may come after later ones of its
			// process (its FORK made the process known first, releasing
			// what was held), as the tracker takes them under -a.
			if at := recordTime(r); r.Type != perf.RecordNamespaces && at < last[uint32(pid)] {
				t.Fatalf("seed %d: process %d's %v at %d handed on after one at %d", seed, pid, r.Type, at, last[uint32(pid)])
			} else if r.Type != perf.RecordNamespaces {
				last[uint32(pid)] = at
			}
			if r.Type == perf.RecordSample {
				kept[true]++
			}
		}
		next := [2]int{}
		for snap := uint64(1); next[0] < len(rings[0]) || next[1] < len(rings[1]); snap++ {
			head := int64(rng.IntN(int(now)+5)) + int64(snap)*4 // the snapshot's time
			order := []int{0, 1}
			if rng.IntN(2) == 0 {
				order = []int{1, 0}
			}
			for _, cpu := range order {
				for next[cpu] < len(rings[cpu]) && recordTime(rings[cpu][next[cpu]]) <= head {
					f.take(rings[cpu][next[cpu]], snap, handle)
					next[cpu]++
					f.settleRead(snap, false, handle)
				}
			}
			f.settleRead(snap, true, handle)
		}
		f.settle(^uint64(0), handle)
		if kept[true] != samples[true] || int(f.dropped) != samples[false] {
			t.Fatalf("seed %d: kept %d samples of %d, dropped %d of %d", seed, kept[true], samples[true], f.dropped, samples[false])
		}
	}
}

// TestNSTargetForgetsOthers: a host process is forgotten at its exit (a
// recording of a busy host holds none of those gone), and a sample of it
// read after its exit is still dropped and counted, once held; after
// that, without a hold.
func TestNSTargetForgetsOthers(t *testing.T) {
	fs := fakeNSProc(t, map[int]uint64{500: 9, 7: 1})
	f, ok := newNSTarget(fs, []int{500})
	if !ok {
		t.Fatal("newNSTarget refused a container in a PID namespace of its own")
	}
	var kept int
	handle := func(*perf.Record) { kept++ }
	f.take(&perf.Record{Type: perf.RecordExit, Task: perf.Task{PID: 7, PPID: 1, TID: 7, PTID: 1, Time: 10}, ID: perf.SampleID{Time: 10}}, 1, handle)
	if _, ok := f.others[7]; ok {
		t.Fatal("the host's process 7 is remembered after its exit")
	}
	f.take(&perf.Record{Type: perf.RecordSample, Sample: perf.Sample{PID: 7, TID: 7, Time: 9}}, 1, handle)
	f.settle(^uint64(0), handle)
	if kept != 0 || f.dropped != 1 {
		t.Errorf("kept %d, dropped %d; want the late sample dropped and counted", kept, f.dropped)
	}
	// A thread of it that goes on: its samples are dropped without a
	// hold once one was.
	f.take(&perf.Record{Type: perf.RecordSample, Sample: perf.Sample{PID: 7, TID: 8, Time: 12}}, 2, handle)
	if len(f.held) != 0 || f.dropped != 2 {
		t.Errorf("held %d, dropped %d; want the thread's sample dropped at once", len(f.held), f.dropped)
	}
	// A short-lived host process whose exit is read (and held) before
	// its creation, from another CPU's ring, is forgotten too.
	f.take(&perf.Record{Type: perf.RecordExit, Task: perf.Task{PID: 800, PPID: 7, TID: 800, PTID: 7, Time: 21}, ID: perf.SampleID{Time: 21}}, 3, handle)
	f.take(&perf.Record{Type: perf.RecordFork, Task: perf.Task{PID: 800, PPID: 7, TID: 800, PTID: 7, Time: 20}, ID: perf.SampleID{Time: 20}}, 3, handle)
	n := &perf.Record{Type: perf.RecordNamespaces, Namespaces: perf.Namespaces{PID: 800, TID: 800}, ID: perf.SampleID{Time: 20}}
	n.Namespaces.Links[perf.NamespacePID].Inode = 1
	f.take(n, 3, handle)
	if _, ok := f.others[800]; ok || len(f.held) != 0 || kept != 0 {
		t.Errorf("after process 800's exit: remembered %v, held %d, kept %d; want it forgotten, nothing held or kept", ok, len(f.held), kept)
	}
}
