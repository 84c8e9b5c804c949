package bpf

import (
	"bufio"
	"os"
	"os/exec"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"nsprof/internal/testutils"
)

// kernelSymbols returns a function naming kernel addresses from
// /proc/kallsyms (the test runs as root: real addresses).
func kernelSymbols(t *testing.T) func(uint64) string {
	t.Helper()
	f, err := os.Open("/proc/kallsyms")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	type sym struct {
		addr uint64
		name string
	}
	var syms []sym
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 3 || !strings.ContainsAny(fields[1], "tTwW") {
			continue
		}
		a, err := strconv.ParseUint(fields[0], 16, 64)
		if err == nil && a != 0 {
			syms = append(syms, sym{a, fields[2]})
		}
	}
	sort.Slice(syms, func(i, j int) bool { return syms[i].addr < syms[j].addr })
	return func(a uint64) string {
		i := sort.Search(len(syms), func(i int) bool { return syms[i].addr > a })
		if i == 0 {
			return "?"
		}
		return syms[i-1].name
	}
}

// TestKernelStacksReused runs pingpong, whose two threads block over and
// over in one read each (and are preempted in one write), with the kernel
// stacks of Options.KernelStacks: nearly every switch-in carries a kernel
// stack, no more than about one in KernelStackReuse was walked afresh,
// each reused stack is one its thread's switch outs walked before, and
// the stacks are the scheduler's under the system call: __schedule (or
// the tracepoint's iterator, when another probe shares it) first, the
// system call entry last, a blocked read through the pipe's read.
func TestKernelStacksReused(t *testing.T) {
	const rounds = 5000
	bin := testutils.BuildFixture(t, "pingpong")
	cmd := exec.Command("taskset", "-c", "0", bin, strconv.Itoa(rounds))
	s := open(t, Options{TGIDs: []int{os.Getpid()}, KernelStacks: true})
	if ok, err := s.KernelStacks(); !ok {
		testutils.RequireCI(t, "no kernel stacks from the program: %v", err)
	}
	if err := cmd.Run(); err != nil {
		t.Fatalf("%v: %v", cmd, err)
	}
	name := kernelSymbols(t)
	pid := int32(cmd.Process.Pid)
	walked := map[int32][][]uint64{} // by thread: the stacks walked
	var n, with, reused, foreign, read int
	bad := map[string]int{}
	if _, err := s.Read(func(r SwitchIn) {
		if r.PID != pid {
			return
		}
		n++
		if r.Kernel == nil {
			return
		}
		with++
		k := r.Kernel
		if r.KernelReused {
			reused++
			if !slices.ContainsFunc(walked[r.TID], func(w []uint64) bool { return slices.Equal(w, k) }) {
				foreign++
				if foreign <= 3 {
					var names []string
					for _, a := range k {
						names = append(names, name(a))
					}
					t.Logf("reused stack of thread %d never walked by it (walked %d): %v", r.TID, len(walked[r.TID]), names)
				}
			}
		} else {
			walked[r.TID] = append(walked[r.TID], k)
		}
		if len(k) < 3 {
			bad["short"]++
			return
		}
		if first := name(k[0]); first != "__schedule" && first != "__traceiter_sched_switch" {
			bad["first frame "+first]++
		}
		if last := name(k[len(k)-1]); !strings.HasPrefix(last, "entry_SYSCALL_64") {
			bad["last frame "+last]++
		}
		if slices.ContainsFunc(k, func(a uint64) bool { return strings.HasSuffix(name(a), "pipe_read") }) {
			read++
		}
	}, nil); err != nil {
		t.Fatal(err)
	}
	fresh := with - reused
	t.Logf("pingpong %d rounds: %d switch-ins, %d with a kernel stack, %d walked, %d reused, %d through the pipe's read; odd stacks %v",
		rounds, n, with, fresh, reused, read, bad)
	if n < 2*rounds || with < n*99/100 {
		t.Errorf("%d switch-ins with a kernel stack of %d; want nearly all of at least %d", with, n, 2*rounds)
	}
	if fresh > with/KernelStackReuse+with/100+8 {
		t.Errorf("%d of %d kernel stacks walked afresh; want about one in %d", fresh, with, KernelStackReuse)
	}
	if fresh < with/KernelStackReuse {
		t.Errorf("%d of %d kernel stacks walked afresh; want at least one in %d", fresh, with, KernelStackReuse)
	}
	// A walked stack's record lost (a full ring, or the program not run
	// at that switch-in) leaves up to KernelStackReuse-1 reuses of it
	// unexplained.
	if lost, err := s.Lost(); foreign > int(lost)*(KernelStackReuse-1) || err != nil {
		t.Errorf("%d reused kernel stacks that their thread never walked (records lost: %d, %v)", foreign, lost, err)
	}
	odd := 0
	for _, k := range bad {
		odd += k
	}
	if odd > with/100 {
		t.Errorf("kernel stacks not the scheduler's under a system call: %v", bad)
	}
	if read < n/4 {
		t.Errorf("%d of %d kernel stacks through the pipe's read; want about half (each thread blocks in read)", read, n)
	}
}

// TestKernelThreadsWalked: a kernel thread has no user registers that
// tell where it leaves the CPU, so its kernel stack is walked at every
// switch out, never reused (with Options.All the program sees the
// machine's kernel threads: those a file's writes and syncs wake, the
// writeback and journal threads).
func TestKernelThreadsWalked(t *testing.T) {
	s := open(t, Options{All: true, KernelStacks: true})
	if ok, err := s.KernelStacks(); !ok {
		testutils.RequireCI(t, "no kernel stacks from the program: %v", err)
	}
	// Writing and syncing a file wakes the kernel's writeback and
	// journal threads.
	f, err := os.Create(t.TempDir() + "/sync")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for end := time.Now().Add(500 * time.Millisecond); time.Now().Before(end); {
		if _, err := f.WriteAt([]byte("x"), 0); err != nil {
			t.Fatal(err)
		}
		if err := f.Sync(); err != nil {
			t.Fatal(err)
		}
	}
	kthread := map[int32]bool{}
	isKthread := func(tid int32) bool {
		k, ok := kthread[tid]
		if !ok {
			k = taskFlags(tid)&pfKthread != 0
			kthread[tid] = k
		}
		return k
	}
	var n, reused, users, usersReused int
	if _, err := s.Read(func(r SwitchIn) {
		if r.Kernel == nil {
			return
		}
		if !isKthread(r.TID) {
			users++
			if r.KernelReused {
				usersReused++
			}
			return
		}
		n++
		if r.KernelReused {
			reused++
		}
	}, nil); err != nil {
		t.Fatal(err)
	}
	t.Logf("kernel threads: %d kernel stacks, %d reused; other tasks: %d, %d reused", n, reused, users, usersReused)
	if n == 0 || reused > 0 {
		t.Errorf("kernel threads: %d kernel stacks, %d reused; want some, none reused", n, reused)
	}
}

// taskFlags returns the flags of thread tid (/proc/TID/stat's ninth
// field), 0 when it is gone.
func taskFlags(tid int32) uint64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(int(tid)) + "/stat")
	if err != nil {
		return 0
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 7 {
		return 0
	}
	v, _ := strconv.ParseUint(f[6], 10, 64)
	return v
}
