package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"nsprof/capture"
	"nsprof/internal/testutils"
)

// TestOffCPUPidIsThread: record --off-cpu -p TID, TID a thread of a
// process other than its main one, records the whole process, as -p
// does without --off-cpu: the main thread's sleeps (whose switch-ins,
// from the idle task, the BPF program gives) carry their off-CPU time.
// The BPF program follows processes by their id: a thread id given as
// such followed nothing, and every sleep lost its switch-in.
func TestOffCPUPidIsThread(t *testing.T) {
	testutils.RequireRoot(t, "recording tests need root")
	bin := testutils.BuildFixture(t, "blocking")
	dir := t.TempDir()
	// 30 sleeps and 30 timerfd reads of 100 ms: about 6 s, while a
	// second thread waits in a read all along.
	cmd := exec.Command(bin, "30", "100", filepath.Join(dir, "times"))
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	pid := cmd.Process.Pid
	tid := otherThread(t, pid)
	capPath := filepath.Join(dir, "off.syscap")
	args := []string{"record", "--off-cpu", "--off-cpu-switch-ins=bpf", "-o", capPath, "-p", strconv.Itoa(tid), "--duration", "2"}
	_, stderr, status := nsprof(t, nil, args...)
	if status != 0 {
		t.Fatalf("record %q: status %d\n%s", args, status, stderr)
	}
	checkSwitchIns(t, capPath, capture.OffCPUSwitchInsBPF)
	off, _ := functionTotals(t, capPath, "--pid", strconv.Itoa(pid), "--off-cpu")
	// 2 s of sleeps and reads of 100 ms each, half of them sleeps:
	// about 1 s; at least 0.5 s allowed for a slow start.
	if s := off["fixture_slow_sleep"]; s < 500e6 {
		t.Errorf("off_cpu of fixture_slow_sleep: %d ns, want at least 500 ms\n%s", s, stderr)
	}
	if u := metadataValue(t, capPath, capture.MetaOffCPUUnpaired); u != "0" {
		t.Logf("%s = %s", capture.MetaOffCPUUnpaired, u)
	}
}

// otherThread waits for process pid to have a thread besides its main
// one and returns its id.
func otherThread(t *testing.T, pid int) int {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range ents {
			if tid, err := strconv.Atoi(e.Name()); err == nil && tid != pid {
				return tid
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("process %d started no thread", pid)
	return 0
}

// TestOffCPUSameProcessSwitchIns: two threads passing a byte back and
// forth through pipes 20000 times on one CPU switch to each other twice
// a round. With the kernel stacks from perf the BPF program
// writes none of the switch-ins from one to the other (the switch outs
// name them); with its own kernel stacks it writes them all, each with
// the stack: either way the switches make intervals, at least one a round,
// with no more unpaired than the rare ones of the BPF path (1 to 8 in
// 40000 here, with or without this; 0.5 % allowed), and no thread is
// left off the CPU at the end (the thread that exits hands its CPU to
// the one waiting in pthread_join without a perf event to say it: the
// program must write that switch-in).
func TestOffCPUSameProcessSwitchIns(t *testing.T) {
	for _, kernel := range []string{"bpf", "perf"} {
		t.Run("kernel-stacks="+kernel, func(t *testing.T) { testOffCPUSameProcessSwitchIns(t, kernel) })
	}
}

func testOffCPUSameProcessSwitchIns(t *testing.T, kernel string) {
	testutils.RequireRoot(t, "recording tests need root")
	bin := testutils.BuildFixture(t, "pingpong")
	capPath := filepath.Join(t.TempDir(), "off.syscap")
	const rounds = 20000
	// On one CPU every switch is from one thread to the other, the
	// last one too.
	taskset, err := exec.LookPath("taskset")
	if err != nil {
		t.Fatal(err)
	}
	args := []string{"record", "--off-cpu", "--off-cpu-switch-ins=bpf", "--off-cpu-kernel-stacks=" + kernel, "-o", capPath, "--", taskset, "-c", "0", bin, strconv.Itoa(rounds)}
	_, stderr, status := nsprof(t, nil, args...)
	if status != 0 {
		t.Fatalf("record %q: status %d\n%s", args, status, stderr)
	}
	checkSwitchIns(t, capPath, capture.OffCPUSwitchInsBPF)
	if got := metadataValue(t, capPath, capture.MetaOffCPUKernelReused); (got != "") != (kernel == "bpf") {
		t.Errorf("kernel stacks from %s: metadata %s = %q", kernel, capture.MetaOffCPUKernelReused, got)
	}
	n, _ := strconv.Atoi(metadataValue(t, capPath, capture.MetaOffCPUIntervals))
	unpaired, _ := strconv.Atoi(metadataValue(t, capPath, capture.MetaOffCPUUnpaired))
	open := metadataValue(t, capPath, capture.MetaOffCPUOpen)
	if n < rounds || unpaired > n/200 || open != "0" {
		t.Errorf("%d intervals, %d unpaired, %s open; want at least %d, at most %d and 0\n%s", n, unpaired, open, rounds, n/200, stderr)
	}
}
