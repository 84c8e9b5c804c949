package record

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"nsprof/internal/testutils"
	"nsprof/proc"
)

// TestMountTablesReused: two processes of one mount namespace and root
// share one read of mountinfo, the kernel's own text; a mount in that
// namespace (a private one, made with unshare) has the next process's
// table read again, with the new mount in it. A process of another
// namespace has a table of its own.
func TestMountTablesReused(t *testing.T) {
	testutils.RequireRoot(t, "mount namespaces need root")
	unshare := testutils.LookPathOrSkip(t, "unshare")
	nsenter := testutils.LookPathOrSkip(t, "nsenter")
	start := func(args ...string) int {
		t.Helper()
		cmd := exec.Command(args[0], args[1:]...)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		return cmd.Process.Pid
	}
	m := &mountTables{fs: proc.DefaultFS}
	defer m.close()
	read := func(pid int) []byte {
		t.Helper()
		// What inspect reads of it, once the process has execed.
		var info procInfo
		for range 100 {
			if info = inspect(proc.DefaultFS, pid, 0); info.Comm == "sleep" {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		data, err := m.read(pid, info.mountKey())
		if err != nil {
			t.Fatal(err)
		}
		want, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/mountinfo")
		if err != nil || !bytes.Equal(data, want) {
			t.Fatalf("pid %d: mountinfo of %d bytes, want the %d of /proc (%v)", pid, len(data), len(want), err)
		}
		return data
	}
	read(start("sleep", "30"))
	read(start("sleep", "30"))
	if m.reads != 1 {
		t.Errorf("two processes of one namespace: %d reads, want 1", m.reads)
	}
	ns := start(unshare, "-m", "--propagation", "private", "sleep", "30")
	before := read(ns)
	if m.reads != 2 {
		t.Errorf("a process of a namespace of its own: %d reads in all, want 2", m.reads)
	}
	dir := t.TempDir()
	if out, err := exec.Command(nsenter, "-t", strconv.Itoa(ns), "-m", "mount", "-t", "tmpfs", "nsprof-test", dir).CombinedOutput(); err != nil {
		t.Fatalf("mount in pid %d's namespace: %v\n%s", ns, err, out)
	}
	after := read(start(nsenter, "-t", strconv.Itoa(ns), "-m", "sleep", "30"))
	if m.reads != 3 || bytes.Equal(before, after) || !strings.Contains(string(after), " "+filepath.Clean(dir)+" ") {
		t.Errorf("after a mount in the namespace: %d reads in all (want 3), new mount %s listed: %v", m.reads, dir, strings.Contains(string(after), dir))
	}
	// Unused for long enough, the tables are let go, their files closed.
	m.expire(time.Now().Add(mountTableIdle - time.Second))
	if len(m.tables) != 2 {
		t.Errorf("%d tables kept before they expire, want 2", len(m.tables))
	}
	m.expire(time.Now().Add(mountTableIdle))
	if len(m.tables) != 0 {
		t.Errorf("%d tables kept once expired, want none", len(m.tables))
	}
}
