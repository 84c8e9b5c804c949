package perf

import (
	"errors"
	"io"
	"os/exec"
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
	r.SetDeadline(time.Now().Add(15 * time.Second))
	var rec Record
	for {
		err := r.ReadInto(&rec)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("after %v: %v (want io.EOF once the target exited)", time.Since(start), err)
		}
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
	}
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
