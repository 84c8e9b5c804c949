package perf

import (
	"os/exec"
	"slices"
	"testing"
	"time"
)

// TestSampleCPUWide: with SampleCPUWide, an Exec target's samples come
// from per-CPU events, which sample another process spinning beside it
// too ([Reader.CPUWide] says so of each); the side-band records (COMM,
// MMAP, FORK, EXIT, SWITCH) are the target's alone; and the reader
// returns io.EOF once the target and its children exited, though the
// per-CPU events go on sampling the other process.
func TestSampleCPUWide(t *testing.T) {
	busy := busyBinary(t)
	other := exec.Command(busy, "20")
	if err := other.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		other.Process.Kill()
		other.Wait()
	})
	cmd, release := startBeforeExec(t, busy, "0.5")
	r, err := OpenWithOptions(Exec(cmd.Process.Pid), Options{SampleCPUWide: true, ContextSwitch: true})
	requirePerf(t, err)
	defer r.Close()
	release()
	start := time.Now()

	pid, otherPID := uint32(cmd.Process.Pid), uint32(other.Process.Pid)
	target := map[uint32]bool{pid: true} // the target's processes, from FORK records
	samples := map[bool]map[uint32]int{true: {}, false: {}}
	sideband := map[RecordType]int{}
	snap := r.Snapshot()
	readToEOF(t, r, 15*time.Second, func(rec *Record) {
		if s := r.Snapshot(); s < snap {
			t.Fatalf("snapshot went from %d to %d", snap, s)
		}
		snap = r.Snapshot()
		switch rec.Type {
		case RecordSample:
			samples[r.CPUWide(&rec.Sample)][rec.Sample.PID]++
		case RecordFork:
			if target[rec.Task.PPID] {
				target[rec.Task.PID] = true
			}
			fallthrough
		case RecordComm, RecordMmap2, RecordExit, RecordSwitch:
			sideband[rec.Type]++
			if p, _ := rec.PIDTID(); !target[p] {
				t.Errorf("%v record of pid %d, not of the target %v", rec.Type, p, target)
			}
		case RecordSwitchCPUWide:
			t.Errorf("a CPU-wide SWITCH record: the SWITCH records are to be per task")
		}
	})
	took := time.Since(start)
	t.Logf("EOF after %v, %d snapshots; per-CPU samples by pid %v, others %v; side-band records %v", took, snap, samples[true], samples[false], sideband)
	if took > 10*time.Second {
		t.Errorf("EOF after %v, the target ran 0.5 s", took)
	}
	if len(samples[false]) > 0 {
		t.Errorf("samples not of the per-CPU events: %v (there is no other sampling event)", samples[false])
	}
	if samples[true][pid] < 50 {
		t.Errorf("%d per-CPU samples of the target, want at least 50 (0.5 s spinning)", samples[true][pid])
	}
	if samples[true][otherPID] < 50 {
		t.Errorf("%d per-CPU samples of pid %d spinning beside it, want at least 50", samples[true][otherPID], otherPID)
	}
	for _, typ := range []RecordType{RecordComm, RecordMmap2, RecordFork, RecordExit, RecordSwitch} {
		if sideband[typ] == 0 {
			t.Errorf("no %v record of the target", typ)
		}
	}
}

// TestSampleCPUWideTaskEvents: with SampleCPUWide, a followed task has
// one event per CPU, the sched_switch tracepoint, which carries the
// side-band records too (no dummy event), and the clone tracepoints of
// CPUWideTracepoints are per CPU: each event of a task costs at every
// one of its context switches. The records are those of per-task events
// still: the side-band records and the sched_switch hits are the
// target's alone; the clone hits are every process's, CPUWide.
func TestSampleCPUWideTaskEvents(t *testing.T) {
	busy := busyBinary(t)
	clones := []string{"syscalls:sys_exit_clone", "syscalls:sys_exit_clone3", "syscalls:sys_exit_fork", "syscalls:sys_exit_vfork"}
	var tps []*Tracepoint
	for _, name := range clones {
		if tp, err := LookupTracepoint(name); err == nil {
			tps = append(tps, tp)
		}
	}
	if len(tps) == 0 {
		t.Fatalf("none of the tracepoints %v", clones)
	}
	sw, err := LookupTracepoint("sched:sched_switch")
	if err != nil {
		t.Fatal(err)
	}
	// The target's shell forks the two children it waits for.
	cmd, release := startBeforeExec(t, "/bin/sh", "-c", busy+" 0.2; sleep 0.1; "+busy+" 0.2")
	opts := Options{SampleCPUWide: true, ContextSwitch: true, StackTracepoints: []string{"sched:sched_switch"}}
	for _, tp := range tps {
		opts.CPUWideTracepoints = append(opts.CPUWideTracepoints, tp.Name)
	}
	r, err := OpenWithOptions(Exec(cmd.Process.Pid), opts)
	requirePerf(t, err)
	defer r.Close()
	cpus, err := onlineCPUs()
	if err != nil {
		t.Fatal(err)
	}
	if perTask := len(r.res.fds) - r.res.cpuWide; perTask != len(cpus) {
		t.Errorf("%d per-task events for %d CPUs, want one per CPU (sched_switch, with the side-band records)", perTask, len(cpus))
	}
	if want := len(cpus) * (1 + len(tps)); r.res.cpuWide != want {
		t.Errorf("%d per-CPU events, want %d (cpu-clock and %d clone tracepoints per CPU)", r.res.cpuWide, want, len(tps))
	}
	release()
	// Another process forks beside it.
	other := exec.Command("/bin/sh", "-c", "for i in 1 2 3; do /bin/true; done")
	if err := other.Start(); err != nil {
		t.Fatal(err)
	}
	defer other.Wait()

	pid, otherPID := uint32(cmd.Process.Pid), uint32(other.Process.Pid)
	target := map[uint32]bool{pid: true}
	sideband := map[RecordType]int{}
	switches := 0
	cloneHits := map[bool]int{} // by whether the target's
	readToEOF(t, r, 15*time.Second, func(rec *Record) {
		switch rec.Type {
		case RecordSample:
			s := &rec.Sample
			switch {
			case sw.Matches(s.RawData):
				switches++
				if r.CPUWide(s) || !target[s.PID] || len(s.Callchain) == 0 {
					t.Errorf("sched_switch hit of pid %d, CPUWide %v, %d callchain entries: want the target's, per task, with its stack", s.PID, r.CPUWide(s), len(s.Callchain))
				}
			case slices.ContainsFunc(tps, func(tp *Tracepoint) bool { return tp.Matches(s.RawData) }):
				if !r.CPUWide(s) {
					t.Errorf("clone hit of pid %d not CPUWide", s.PID)
				}
				if len(s.Callchain) != 0 {
					t.Errorf("clone hit of pid %d with %d callchain entries, want none", s.PID, len(s.Callchain))
				}
				cloneHits[target[s.PID]]++
			}
		case RecordFork:
			if target[rec.Task.PPID] {
				target[rec.Task.PID] = true
			}
			fallthrough
		case RecordComm, RecordMmap2, RecordExit, RecordSwitch:
			sideband[rec.Type]++
			if p, _ := rec.PIDTID(); !target[p] {
				t.Errorf("%v record of pid %d, not of the target %v (pid %d forked beside it)", rec.Type, p, target, otherPID)
			}
		}
	})
	t.Logf("sched_switch hits %d, clone hits: target %d, others %d; side-band records %v", switches, cloneHits[true], cloneHits[false], sideband)
	for _, typ := range []RecordType{RecordComm, RecordMmap2, RecordFork, RecordExit, RecordSwitch} {
		if sideband[typ] == 0 {
			t.Errorf("no %v record of the target", typ)
		}
	}
	if switches == 0 {
		t.Error("no sched_switch hit of the target")
	}
	if cloneHits[true] < 2 {
		t.Errorf("%d clone hits of the target, want at least 2 (its shell forks twice)", cloneHits[true])
	}
	if cloneHits[false] < 3 {
		t.Errorf("%d clone hits of other processes, want at least 3 (pid %d forks three times)", cloneHits[false], otherPID)
	}
}
