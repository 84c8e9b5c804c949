package record

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"nsprof/perf"
	"nsprof/proc"
)

// TestTargetFilter: of the samples of a per-CPU sampling event, the
// filter keeps those of the recorded processes only: the command from
// its exec (not before), a child from its fork even when its sample is
// read a snapshot before the FORK record, a process up to its exit and
// a pid used again by a recorded child; it drops and counts every
// other process's, the held ones only once the next snapshot was
// handled, and never drops a sample it holds too early.
func TestTargetFilter(t *testing.T) {
	f := newTargetFilter(proc.FS{Root: t.TempDir()}, nil)
	var kept []uint64 // the times of the samples kept
	keep := func(rec *perf.Record) { kept = append(kept, rec.Sample.Time) }
	sample := func(pid uint32, at uint64, snap uint64) {
		rec := &perf.Record{Type: perf.RecordSample, Sample: perf.Sample{PID: pid, TID: pid, Time: at, Callchain: []uint64{at}}}
		if f.take(rec, snap) {
			keep(rec)
		}
		rec.Sample.Time, rec.Sample.Callchain[0] = 0, 0 // the reader reuses it
		f.settleRead(snap, false, keep)
	}
	comm := func(pid uint32, at uint64) {
		rec := &perf.Record{Type: perf.RecordComm, Comm: perf.Comm{PID: pid, TID: pid, Exec: true}, ID: perf.SampleID{Time: at}}
		f.learn(rec)
	}
	fork := func(pid, ppid uint32, at uint64) {
		f.learn(&perf.Record{Type: perf.RecordFork, Task: perf.Task{PID: pid, PPID: ppid, TID: pid, PTID: ppid, Time: at}})
	}
	exit := func(pid uint32, at uint64) {
		f.learn(&perf.Record{Type: perf.RecordExit, Task: perf.Task{PID: pid, PPID: 1, TID: pid, PTID: 1, Time: at}})
	}

	// Snapshot 1: the command (pid 100) before its exec, read before
	// the COMM of its exec at 10; another process (pid 7).
	sample(100, 5, 1)
	sample(7, 6, 1)
	// Snapshot 2: the exec; a sample after it.
	comm(100, 10)
	sample(100, 11, 2)
	if want := []uint64{11}; !slices.Equal(kept, want) {
		t.Fatalf("after snapshot 2: kept %v, want %v (held ones not settled before the next snapshot is handled)", kept, want)
	}
	// Snapshot 3: a child (pid 200) sampled at 21, its FORK at 20 read
	// in snapshot 4, and then a sample of snapshot 4.
	sample(200, 21, 3)
	if want := []uint64{11}; !slices.Equal(kept, want) || f.dropped != 2 {
		t.Fatalf("in snapshot 3: kept %v, want %v; dropped %d, want 2 (pid 100 before its exec, pid 7)", kept, want, f.dropped)
	}
	fork(200, 100, 20)
	sample(100, 22, 4)
	f.settleRead(4, true, keep) // snapshot 4 drained
	if want := []uint64{11, 22, 21}; !slices.Equal(kept, want) {
		t.Fatalf("after snapshot 4: kept %v, want %v (the child's sample held until its FORK was read)", kept, want)
	}
	// The child exits at 30; a sample of it from 29, read after its EXIT,
	// is kept; one from 31 (its pid used by another process) is not.
	exit(200, 30)
	sample(200, 29, 5)
	sample(200, 31, 5)
	f.settleRead(5, true, keep)
	if f.dropped != 2 {
		t.Fatalf("dropped %d once snapshot 5 was drained, want 2: its held sample waits for snapshot 6", f.dropped)
	}
	f.settleRead(6, true, keep) // snapshot 6 drained, empty
	if want := []uint64{11, 22, 21, 29}; !slices.Equal(kept, want) || f.dropped != 3 {
		t.Fatalf("after the child's exit: kept %v, want %v; dropped %d, want 3", kept, want, f.dropped)
	}
	// The pid used again by a recorded child forked at 40, whose sample
	// at 41 is read in snapshot 7, its FORK in snapshot 8.
	sample(200, 41, 7)
	fork(200, 100, 40)
	f.settleRead(8, true, keep)
	if want := []uint64{11, 22, 21, 29, 41}; !slices.Equal(kept, want) {
		t.Fatalf("after pid 200's second fork: kept %v, want %v", kept, want)
	}
	// A held copy is its own: the samples kept from holds carry their
	// own stacks.
	sample(300, 50, 9)
	fork(300, 100, 49)
	var stacks []uint64
	f.settle(^uint64(0), func(rec *perf.Record) { stacks = append(stacks, rec.Sample.Callchain...) })
	if want := []uint64{50}; !slices.Equal(stacks, want) {
		t.Errorf("held sample's callchain %v, want %v", stacks, want)
	}
	if len(f.held) != 0 {
		t.Errorf("%d samples still held after the final settle", len(f.held))
	}
}

// TestTargetFilterPIDs: with -p, the processes named are recorded from
// the start (a thread id stands for its process), others never are; a
// process whose main thread exits while another runs is still recorded.
func TestTargetFilterPIDs(t *testing.T) {
	root := t.TempDir()
	for path, data := range map[string]string{
		"43/status":         "Name:\tworker\nTgid:\t42\nPid:\t43\nPPid:\t1\n",
		"42/task/42/status": "", "42/task/43/status": "",
	} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(root, path)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, path), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	f := newTargetFilter(proc.FS{Root: root}, []int{43, 50})
	f.exit(42, 10) // its main thread: thread 43 goes on
	f.exit(50, 10)
	for _, tc := range []struct {
		pid  int32
		at   int64
		want verdict
	}{{42, 1, keepSample}, {42, 20, keepSample}, {50, 5, keepSample}, {50, 20, holdSample}, {44, 1, holdSample}} {
		if got := f.verdict(tc.pid, tc.at); got != tc.want {
			t.Errorf("verdict(%d, %d) = %d, want %d", tc.pid, tc.at, got, tc.want)
		}
	}
}

// TestTargetFilterNotSample: the hits of per-CPU tracepoints (the clone
// tracepoints of --off-cpu) of other processes are dropped as their
// samples are, but not counted as samples left out, whether dropped at
// once or after being held; the recorded process's are kept.
func TestTargetFilterNotSample(t *testing.T) {
	f := newTargetFilter(proc.FS{Root: t.TempDir()}, []int{100})
	f.notSample = func(s *perf.Sample) bool { return len(s.RawData) > 0 }
	var kept int
	keep := func(*perf.Record) { kept++ }
	take := func(pid uint32, at uint64, hit bool) {
		rec := &perf.Record{Type: perf.RecordSample, Sample: perf.Sample{PID: pid, TID: pid, Time: at}}
		if hit {
			rec.Sample.RawData = []byte{1, 2, 3, 4, 5}
		}
		if f.take(rec, 1) {
			keep(rec)
		}
	}
	take(100, 5, true) // the recorded process's clone
	take(7, 6, true)   // another process's, held (pid 7 unknown yet)
	take(7, 7, false)  // and a sample of it
	take(100, 8, false)
	f.settle(1, keep)
	if kept != 2 || f.dropped != 1 {
		t.Errorf("kept %d, want 2 (pid 100's hit and sample); dropped %d, want 1 (pid 7's sample, not its hit)", kept, f.dropped)
	}
}
