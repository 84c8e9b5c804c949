package main

import (
	"math"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"nsprof/capture"
	"nsprof/internal/testutils"
)

// TestOffCPUKernelStacksReused: pingpong's two threads block over and
// over in one read each (and are preempted in one write), 20000 rounds
// on one CPU. With the kernel stacks from the BPF program, walked once
// in capture.OffCPUKernelStackReuse switch outs of a thread at one place,
// the capture counts nearly all of its intervals as reused (not one: the
// program walked every stack), none without a kernel stack, and the
// stacks are still right: every interval's goes through the scheduler
// (__schedule), and the time under the kernel's read of the pipe
// (ksys_read) is the time under libc's read, as with the kernel stacks
// perf walks at every switch out: a stack reused at the wrong place
// would move time between the two. Within 5 %: a thread also leaves the
// CPU inside read but outside ksys_read (preempted on its way out of the
// system call), which perf's own walks showed for 1.8 % of read's time
// once and nsprof's reused stacks for 3.5 % (CI, two runs of hundreds).
func TestOffCPUKernelStacksReused(t *testing.T) {
	testutils.RequireRoot(t, "recording tests need root")
	bin := testutils.BuildFixture(t, "pingpong")
	taskset, err := exec.LookPath("taskset")
	if err != nil {
		t.Fatal(err)
	}
	const rounds = 20000
	for _, kernel := range []string{"bpf", "perf"} {
		capPath := filepath.Join(t.TempDir(), "off.syscap")
		args := []string{"record", "--off-cpu", "--off-cpu-switch-ins=bpf", "--off-cpu-kernel-stacks=" + kernel, "-o", capPath, "--", taskset, "-c", "0", bin, strconv.Itoa(rounds)}
		_, stderr, status := nsprof(t, nil, args...)
		if status != 0 {
			t.Fatalf("record %q: status %d\n%s", args, status, stderr)
		}
		n, _ := strconv.ParseInt(metadataValue(t, capPath, capture.MetaOffCPUIntervals), 10, 64)
		reused, _ := strconv.ParseInt(metadataValue(t, capPath, capture.MetaOffCPUKernelReused), 10, 64)
		none := metadataValue(t, capPath, capture.MetaOffCPUNoKernel)
		off, _ := functionTotals(t, capPath, "--off-cpu")
		var total int64
		for name, v := range off {
			if capture.IsOffCPUMarker(name) {
				total += v
			}
		}
		read, kread, sched := off["read"], off["ksys_read"], off["__schedule"]
		t.Logf("kernel stacks from %s: %d intervals, %d reused; off-CPU %.3fs, under __schedule %.3fs, read %.3fs, ksys_read %.3fs",
			kernel, n, reused, float64(total)/1e9, float64(sched)/1e9, float64(read)/1e9, float64(kread)/1e9)
		if n < 2*rounds*9/10 {
			t.Errorf("kernel stacks from %s: %d intervals, want about %d", kernel, n, 2*rounds)
		}
		if kernel == "bpf" {
			if min := n - n/capture.OffCPUKernelStackReuse - n/50; reused < min || reused >= n {
				t.Errorf("%d of %d intervals with a reused kernel stack; want at least %d (one walk in %d), not all", reused, n, min, capture.OffCPUKernelStackReuse)
			}
			if none != "0" {
				t.Errorf("%s = %q, want 0", capture.MetaOffCPUNoKernel, none)
			}
		}
		if total == 0 || sched < total*999/1000 {
			t.Errorf("kernel stacks from %s: %d ns of %d off-CPU under __schedule, want all", kernel, sched, total)
		}
		if read < total/5 || math.Abs(float64(kread-read)) > 0.05*float64(read) {
			t.Errorf("kernel stacks from %s: %d ns under ksys_read, %d under read (of %d); want the same within 5 %%, at least a fifth", kernel, kread, read, total)
		}
	}
}

// TestOffCPUKernelStacksRunnable: pipefill's threads, on one CPU, sleep
// in the pipe's write and read, and are switched out runnable on their
// way back from the same write and read (their stacks then end in
// exit_to_user_mode_loop, without ksys_write or ksys_read): the same
// user registers, other kernel stacks. Each thread's time asleep in its
// loop must be under ksys_write or ksys_read. When the kernel stack
// walked at a runnable switch out was reused for the sleeps at that
// place, 8 to 44 % of the reader's time asleep was under ksys_read in
// three runs (the rest under exit_to_user_mode_loop).
func TestOffCPUKernelStacksRunnable(t *testing.T) {
	testutils.RequireRoot(t, "recording tests need root")
	bin := testutils.BuildFixture(t, "pipefill")
	taskset, err := exec.LookPath("taskset")
	if err != nil {
		t.Fatal(err)
	}
	capPath := filepath.Join(t.TempDir(), "off.syscap")
	args := []string{"record", "--off-cpu", "--off-cpu-switch-ins=bpf", "--off-cpu-kernel-stacks=bpf", "-o", capPath, "--", taskset, "-c", "0", bin, "3000"}
	_, stderr, status := nsprof(t, nil, args...)
	if status != 0 {
		t.Fatalf("record %q: status %d\n%s", args, status, stderr)
	}
	folded, stderr, status := nsprof(t, nil, "export", capPath, "--format", "folded", "--off-cpu")
	if status != 0 {
		t.Fatalf("export: status %d\n%s", status, stderr)
	}
	for _, c := range []struct{ loop, call string }{{"pipefill_read", "ksys_read"}, {"pipefill_write", "ksys_write"}} {
		var asleep, under int64
		for stack, v := range foldedCounts(t, folded) {
			frames := strings.Split(stack, ";")
			if !slices.Contains(frames, c.loop) || frames[len(frames)-1] != "[off-CPU: S sleeping]" {
				continue
			}
			asleep += v
			if slices.Contains(frames, c.call) {
				under += v
			}
		}
		t.Logf("%s: %.3f ms asleep, %.3f under %s", c.loop, float64(asleep)/1e6, float64(under)/1e6, c.call)
		if asleep == 0 || under < asleep*99/100 {
			t.Errorf("%s: %d ns asleep, %d of it under %s: want all\n%s", c.loop, asleep, under, c.call, folded)
		}
	}
}

// TestOffCPUKernelStacksOpen: a thread still off the CPU when the
// recording ends has no switch-in to carry its kernel stack; the
// recorder takes it from the BPF program's maps. The offcpu fixture
// sleeps 300 ms of every 310 in nanosleep; recorded for 1 s with -p, it
// is most likely asleep at the end (3 % of the time it is not: then
// the test checks what it checks of every interval): every interval's
// kernel stack goes through the scheduler, the open one's too, and the
// sleeps' through the kernel's nanosleep.
func TestOffCPUKernelStacksOpen(t *testing.T) {
	testutils.RequireRoot(t, "recording tests need root")
	bin := testutils.BuildFixture(t, "offcpu")
	fixture := exec.Command(bin, "100", "300", "10")
	if err := fixture.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fixture.Process.Kill(); fixture.Wait() })
	capPath := filepath.Join(t.TempDir(), "off.syscap")
	args := []string{"record", "--off-cpu", "--off-cpu-switch-ins=bpf", "-o", capPath, "-p", strconv.Itoa(fixture.Process.Pid), "--duration", "1"}
	_, stderr, status := nsprof(t, nil, args...)
	if status != 0 {
		t.Fatalf("record %q: status %d\n%s", args, status, stderr)
	}
	open := metadataValue(t, capPath, capture.MetaOffCPUOpen)
	off, _ := functionTotals(t, capPath, "--off-cpu")
	total, sched, sleep := off["[off-CPU: S sleeping]"], off["__schedule"], off["fixture_block"]
	t.Logf("%s intervals open at the end; off-CPU asleep %.3fs, under __schedule %.3fs, fixture_block %.3fs, hrtimer_nanosleep %.3fs",
		open, float64(total)/1e9, float64(sched)/1e9, float64(sleep)/1e9, float64(off["hrtimer_nanosleep"])/1e9)
	// The sleeps (S) must all be under the kernel's nanosleep; not all of
	// fixture_block's time is a sleep: preempted on a loaded machine
	// between its nanosleep's system calls (R, under a timer
	// interrupt), it counted 4 ms more than the sleeps once, and this
	// compared nanosleep's time with that.
	if sleep < 500e6 || sched < total*999/1000 || off["hrtimer_nanosleep"] < total*999/1000 {
		t.Errorf("off-CPU time asleep %d ns, in fixture_block %d, under __schedule %d, under hrtimer_nanosleep %d: want most of a second, all through the kernel's nanosleep\n%s",
			total, sleep, sched, off["hrtimer_nanosleep"], stderr)
		logOffCPUStacks(t, capPath)
	}
}

// logOffCPUStacks logs the off-CPU stacks of the capture at capPath
// (folded, with their nanoseconds) and how many intervals had a kernel
// stack walked at another switch out: what a failure needs to tell a
// wrong kernel stack from a reused one.
func logOffCPUStacks(t *testing.T, capPath string) {
	t.Helper()
	out, stderr, status := nsprof(t, nil, "export", capPath, "--format", "folded", "--off-cpu")
	if status != 0 {
		t.Logf("export --off-cpu: status %d\n%s", status, stderr)
		return
	}
	t.Logf("%s intervals, %s with a reused kernel stack, %s without one; off-CPU stacks:\n%s",
		metadataValue(t, capPath, capture.MetaOffCPUIntervals), metadataValue(t, capPath, capture.MetaOffCPUKernelReused),
		metadataValue(t, capPath, capture.MetaOffCPUNoKernel), out)
}
