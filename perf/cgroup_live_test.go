package perf

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"nsprof/internal/testutils"
)

// TestCgroupTarget samples a cgroup of its own (cgroup v2, where perf
// events are bound when no v1 hierarchy has the perf_event controller)
// holding one busy process, with another busy process outside it: every
// sample and every FORK is of the process inside or its child.
func TestCgroupTarget(t *testing.T) {
	testutils.RequireRoot(t, "making a cgroup needs root")
	root := cgroup2Mount(t)
	dir := filepath.Join(root, "nsprof-perf-test-"+strconv.Itoa(os.Getpid()))
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(dir) })
	busy := busyBinary(t)
	outside := exec.Command(busy, "2")
	if err := outside.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { outside.Process.Kill(); outside.Wait() })
	// The process inside joins the cgroup before it execs the busy loop
	// (and forks a child there).
	inside := exec.Command("/bin/sh", "-c", `echo $$ > "$1/cgroup.procs"; read x; "$2" 1 & "$2" 1; wait`, "sh", dir, busy)
	stdin, err := inside.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := inside.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { inside.Process.Kill(); inside.Wait() })
	r, err := OpenWithOptions(Cgroup(dir), Options{})
	requirePerf(t, err)
	defer r.Close()
	stdin.Write([]byte("go\n"))
	shell := uint32(inside.Process.Pid)
	ours := map[uint32]bool{shell: true}
	var samples, others int
	readAll(t, r, 2500*time.Millisecond, func(rec *Record) {
		switch rec.Type {
		case RecordFork:
			if ours[rec.Task.PPID] {
				ours[rec.Task.PID] = true
			} else {
				t.Errorf("FORK of %d by %d, outside the cgroup's processes", rec.Task.PID, rec.Task.PPID)
			}
		case RecordSample:
			if ours[rec.Sample.PID] {
				samples++
			} else {
				others++
			}
		}
	})
	if samples < 100 || others > 0 {
		t.Errorf("%d samples of the cgroup's processes (want its busy second), %d of others (pid %d outside it busy too)", samples, others, outside.Process.Pid)
	}
}

// cgroup2Mount returns where cgroup v2 is mounted, skipping (failing in
// CI) when perf events are bound to a v1 perf_event hierarchy instead.
func cgroup2Mount(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	mount := ""
	for _, line := range strings.Split(string(b), "\n") {
		pre, post, ok := strings.Cut(line, " - ")
		f := strings.Fields(pre)
		if !ok || len(f) < 5 {
			continue
		}
		switch typ := strings.Fields(post)[0]; {
		case typ == "cgroup2":
			mount = f[4]
		case typ == "cgroup" && strings.Contains(post, "perf_event"):
			testutils.RequireCI(t, "perf events are bound to a v1 perf_event hierarchy at %s", f[4])
		}
	}
	if mount == "" {
		testutils.RequireCI(t, "no cgroup2 mount")
	}
	return mount
}
