//go:build linux

package container

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"nsprof/internal/testutils"
	"nsprof/internal/testutils/containers"
)

// TestTaskRoot: when the main thread has exited, /proc/PID/root is gone
// but a remaining thread's /proc/PID/task/TID/root still pins the root.
func TestTaskRoot(t *testing.T) {
	bin := testutils.BuildC(t, filepath.Join("testdata", "leader-exit.c"), "-Wl,--build-id")
	cmd := exec.Command(bin)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	pid := cmd.Process.Pid
	// Wait for the leader to become a zombie with a live thread.
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/root"); err != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("main thread did not exit")
		}
		time.Sleep(10 * time.Millisecond)
	}
	p, err := Open(pid)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if _, via, err := p.pinnedRoot(); err != nil || via != ViaTaskRoot {
		t.Fatalf("pinned root via %q, %v; want task-root", via, err)
	}
	f, err := p.OpenInRoot(bin)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	m := Mapping{Path: bin, BuildID: containers.BuildID(t, bin)}
	f, via, err := p.OpenMapped(m)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if via != ViaTaskRoot || !bytes.Equal(fileBuildID(t, f), m.BuildID) {
		t.Errorf("via %s, want task-root", via)
	}
}
