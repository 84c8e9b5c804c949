package bpf

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"nsprof/internal/testutils"
	"nsprof/internal/unix"
)

// open loads the programs for real: the kernel's verifier checks them.
func open(t *testing.T, opts Options) *SwitchIns {
	t.Helper()
	s, err := Open(opts)
	if err != nil {
		testutils.RequireCI(t, "loading the switch-in program (root and BTF needed): %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// sleeper starts a shell that sleeps n times in short steps, so that it
// and its children switch out and back in often.
func sleeper(t *testing.T) *exec.Cmd {
	t.Helper()
	cmd := exec.Command("sh", "-c", "i=0; while [ $i -lt 20 ]; do sleep 0.01; i=$((i+1)); done")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd
}

// TestFollowsForkedChildren checks the filter of the programs: a process
// forked by a followed one after Open is followed, with its own
// children; one forked before is not.
func TestFollowsForkedChildren(t *testing.T) {
	unrelated := sleeper(t) // forked before Open: not followed
	s := open(t, Options{TGIDs: []int{os.Getpid()}})
	child := sleeper(t)
	if !s.Followed(child.Process.Pid) {
		t.Errorf("child %d forked after Open not followed", child.Process.Pid)
	}
	if s.Followed(unrelated.Process.Pid) {
		t.Errorf("process %d forked before Open followed", unrelated.Process.Pid)
	}
	childPID, otherPID := int32(child.Process.Pid), int32(unrelated.Process.Pid)
	done := make(chan error, 2)
	go func() { done <- child.Wait() }()
	go func() { done <- unrelated.Wait() }()
	var fromChild, fromOther, fromSelf, idle int
	pids := map[int32]bool{}
	read := func() {
		if _, err := s.Read(func(r SwitchIn) {
			switch r.PID {
			case childPID:
				fromChild++
			case otherPID:
				fromOther++
			case int32(os.Getpid()):
				fromSelf++
			case 0:
				idle++
			}
			pids[r.PID] = true
		}, nil); err != nil {
			t.Fatal(err)
		}
	}
	for range 2 {
		for {
			read()
			select {
			case err := <-done:
				if err != nil {
					t.Fatal(err)
				}
			case <-time.After(5 * time.Millisecond):
				continue
			}
			break
		}
	}
	read()
	if fromChild == 0 {
		t.Errorf("no switch-in of the followed child %d", childPID)
	}
	if fromSelf == 0 {
		t.Errorf("no switch-in of the test process %d itself", os.Getpid())
	}
	if fromOther != 0 || idle != 0 {
		t.Errorf("%d switch-ins of the unrelated process %d, %d of the idle task", fromOther, otherPID, idle)
	}
	// The children's sleep commands are followed too: more processes
	// than the test and the shell.
	if len(pids) < 3 {
		t.Errorf("switch-ins of %d processes (%v), want the test's, the shell's and its sleeps'", len(pids), pids)
	}
	// The exit program forgets a process that exited.
	if s.Followed(child.Process.Pid) {
		t.Errorf("child %d still followed after it exited", childPID)
	}
	if lost, err := s.Lost(); err != nil || lost != 0 {
		t.Errorf("Lost() = %d, %v; want 0", lost, err)
	}
}

// TestAllTasks checks that Options.All reports other processes' switch-
// ins, with times of CLOCK_MONOTONIC, and never the idle task's.
func TestAllTasks(t *testing.T) {
	s := open(t, Options{All: true})
	before := monotonic()
	other := sleeper(t)
	if err := other.Wait(); err != nil {
		t.Fatal(err)
	}
	after := monotonic()
	var seen, idle, outside int
	if _, err := s.Read(func(r SwitchIn) {
		switch {
		case r.TID == 0:
			idle++
		case r.PID == int32(other.Process.Pid):
			seen++
			if r.Time < before || r.Time > after {
				outside++
			}
		}
	}, nil); err != nil {
		t.Fatal(err)
	}
	if seen == 0 || idle != 0 || outside != 0 {
		t.Errorf("switch-ins of process %d: %d (%d outside [%d, %d]); of the idle task: %d", other.Process.Pid, seen, outside, before, after, idle)
	}
}

func TestCloseTwice(t *testing.T) {
	s := open(t, Options{All: true})
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Read(func(SwitchIn) {}, nil); err == nil {
		t.Error("Read after Close: no error")
	}
}

func monotonic() int64 { return unix.MonotonicNow() }

// TestTypedProgram checks that the sched_switch program loads BTF-typed
// (the kernel's verifier accepts its direct loads), and that it writes
// the switch-ins between threads of a process without perf events:
// SkipSameProcess leaves out only those a perf event of the thread
// leaving tells. pingpong, pinned to one CPU, hands it between its two
// threads twice a round.
func TestTypedProgram(t *testing.T) {
	bin := testutils.BuildFixture(t, "pingpong")
	cmd := exec.Command("taskset", "-c", "0", bin, "2000")
	s := open(t, Options{TGIDs: []int{os.Getpid()}, SkipSameProcess: true})
	if !s.Typed() {
		testutils.RequireCI(t, "the BTF-typed switch-in program did not load (Linux 5.5+ with BTF needed): %v", s.typedErr)
	}
	if err := cmd.Run(); err != nil {
		t.Fatalf("%v: %v", cmd, err)
	}
	pid := int32(cmd.Process.Pid)
	tids := map[int32]int{}
	if _, err := s.Read(func(r SwitchIn) {
		if r.PID == pid {
			tids[r.TID]++
		}
	}, nil); err != nil {
		t.Fatal(err)
	}
	// taskset execs pingpong: its process, with its thread.
	n := 0
	for _, k := range tids {
		n += k
	}
	if len(tids) < 2 || n < 2*2000 {
		t.Errorf("switch-ins of pingpong (pid %d): %d, of threads %v; want at least %d, of its 2 threads", pid, n, tids, 2*2000)
	}
}

// TestClones checks the clone records, of followed processes and of all:
// a shell in a new PID namespace (unshare, whose own fork is in the
// initial one: no record) starts a sleep and prints its id as the shell
// knows it; a record names the sleep with that id and its host id.
func TestClones(t *testing.T) {
	for _, all := range []bool{false, true} {
		t.Run(fmt.Sprintf("all=%t", all), func(t *testing.T) { testClones(t, all) })
	}
}

func testClones(t *testing.T, all bool) {
	unshare := testutils.LookPathOrSkip(t, "unshare")
	s := open(t, Options{All: all, TGIDs: []int{os.Getpid()}, Clones: true})
	if !s.Clones() {
		testutils.RequireCI(t, "the kernel's BTF gives no struct pid offsets: no clone records")
	}
	out, err := exec.Command(unshare, "--pid", "--fork", "sh", "-c", "sleep 0.05 & echo $!; wait").Output()
	if err != nil {
		testutils.RequireCI(t, "unshare --pid: %v", err)
	}
	nsid, err := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil {
		t.Fatalf("the shell printed %q", out)
	}
	var clones []Clone
	if _, err := s.Read(func(SwitchIn) {}, func(c Clone) { clones = append(clones, c) }); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, c := range clones {
		if c.NSID == int32(nsid) && c.Child != c.NSID && c.Child > 0 && c.Parent == c.PID && c.Time > 0 {
			found = true
		}
		if c.NSID == c.Child {
			t.Errorf("clone record of a task whose id is the host's: %+v", c)
		}
	}
	if !found {
		t.Errorf("no clone record of the sleep, id %d in its namespace: %+v", nsid, clones)
	}
}

// TestLostWhenFull fills a one-page ring buffer with the switch-ins of
// the test process itself, never read, and checks that the records that
// found it full are counted.
func TestLostWhenFull(t *testing.T) {
	s := open(t, Options{TGIDs: []int{os.Getpid()}, RingBytes: os.Getpagesize()})
	// A one-page ring holds about 200 records of 16 bytes: sleeping
	// threads come back to a CPU a few thousand times.
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 500 {
				time.Sleep(50 * time.Microsecond)
			}
		})
	}
	wg.Wait()
	lost, err := s.Lost()
	if err != nil || lost == 0 {
		t.Errorf("Lost() = %d, %v; want some", lost, err)
	}
	t.Logf("%d switch-ins lost to a full ring", lost)
}
