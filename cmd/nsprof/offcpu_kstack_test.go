package main

import (
	"math"
	"os/exec"
	"path/filepath"
	"strconv"
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
// would move time between the two.
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
		if read < total/5 || math.Abs(float64(kread-read)) > 0.01*float64(read) {
			t.Errorf("kernel stacks from %s: %d ns under ksys_read, %d under read (of %d); want the same, at least a fifth", kernel, kread, read, total)
		}
	}
}
