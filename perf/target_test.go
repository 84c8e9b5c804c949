package perf

import (
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"nsprof/internal/testutils"
)

func TestAllTasks(t *testing.T) {
	busy := busyBinary(t)
	// The turn first: the busy programs run a second, and waiting for
	// another package's system-wide recording took longer in CI.
	testutils.SystemWide(t, false)
	var cmds []*exec.Cmd
	for range 2 {
		cmd := exec.Command(busy, "1")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() { cmd.Process.Kill(); cmd.Wait() }()
		cmds = append(cmds, cmd)
	}
	r, err := Open(AllTasks())
	requirePerf(t, err)
	defer r.Close()
	pids := map[uint32]int{}
	cpus := map[int]int{}
	var idle int
	readAll(t, r, 500*time.Millisecond, func(rec *Record) {
		if rec.Type != RecordSample {
			return
		}
		pids[rec.Sample.PID]++
		cpus[rec.CPU]++
		if rec.Sample.PID == 0 {
			idle++
		}
	})
	t.Logf("samples by cpu %v from %d pids", cpus, len(pids))
	if len(pids) < 2 {
		t.Errorf("samples from %d pids, want several", len(pids))
	}
	for _, c := range cmds {
		if pids[uint32(c.Process.Pid)] == 0 {
			t.Errorf("no samples of busy pid %d", c.Process.Pid)
		}
	}
	if len(cpus) != r.CPUs() {
		t.Errorf("samples on cpus %v, want all %d", cpus, r.CPUs())
	}
	if idle != 0 {
		t.Errorf("%d idle samples despite exclude_idle", idle)
	}
}

// TestProcesses attaches to a running process with two threads (perf
// record -p), then makes it fork, and checks that both threads and the
// child are sampled and that the Reader ends when they have all exited.
func TestProcesses(t *testing.T) {
	cmd := exec.Command(busyBinary(t), "0.6", "wait")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	pid := cmd.Process.Pid
	for i := 0; ; i++ { // wait for the second thread
		ents, _ := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/task")
		if len(ents) >= 2 {
			break
		}
		if i == 100 {
			t.Fatal("busy did not start its thread")
		}
		time.Sleep(10 * time.Millisecond)
	}
	r, err := Open(Processes(pid))
	requirePerf(t, err)
	defer r.Close()
	stdin.Write([]byte{'f'}) // fork now

	// Rings are per CPU and not merged, so the child's first samples can
	// come before the FORK record: classify after reading everything.
	tids := map[uint32]int{}
	samplesByPID := map[uint32]int{}
	var child uint32
	exits := 0
	start := time.Now()
	readAll(t, r, 10*time.Second, func(rec *Record) {
		switch rec.Type {
		case RecordSample:
			samplesByPID[rec.Sample.PID]++
			if rec.Sample.PID == uint32(pid) {
				tids[rec.Sample.TID]++
			}
		case RecordFork:
			if rec.Task.PPID == uint32(pid) && rec.Task.PID != uint32(pid) {
				child = rec.Task.PID
			}
		case RecordExit:
			exits++
		}
	})
	for p := range samplesByPID {
		if p != uint32(pid) && p != child {
			t.Errorf("sample of pid %d", p)
		}
	}
	childSamples := samplesByPID[child]
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("reader did not end with the process: %v", d)
	}
	if len(tids) < 2 || child == 0 || childSamples < 10 {
		t.Errorf("samples by tid %v; child %d with %d samples", tids, child, childSamples)
	}
	if exits < 3 {
		t.Errorf("%d EXIT records, want 3 tasks", exits)
	}
}
