package perf

import (
	"syscall"
	"testing"
	"time"

	"nsprof/internal/testutils"
)

// TestNamespacesRecords runs a shell that starts a child in its own mount
// namespace (unshare -m) and one in the shell's, and checks the
// NAMESPACES records Options.Namespaces asks for: each child's, the
// second's mount namespace that of this process (device and inode of
// /proc/self/ns/mnt), the first's another; none without the option.
func TestNamespacesRecords(t *testing.T) {
	testutils.RequireRoot(t, "unshare -m and namespace records need root")
	unshare := testutils.LookPathOrSkip(t, "unshare")
	var self syscall.Stat_t
	if err := syscall.Stat("/proc/self/ns/mnt", &self); err != nil {
		t.Fatal(err)
	}
	for _, on := range []bool{true, false} {
		cmd, release := startBeforeExec(t, "/bin/sh", "-c", unshare+` -m /bin/true; /bin/true`)
		r, err := OpenWithOptions(Exec(cmd.Process.Pid), Options{Namespaces: on})
		requirePerf(t, err)
		if r.Namespaces() != on {
			t.Fatalf("Namespaces() %v, asked %v", r.Namespaces(), on)
		}
		release()
		shell := uint32(cmd.Process.Pid)
		children := map[uint32]bool{}
		var records []Namespaces
		readToEOF(t, r, 10*time.Second, func(rec *Record) {
			switch rec.Type {
			case RecordFork:
				if rec.Task.PPID == shell && rec.Task.PID == rec.Task.TID {
					children[rec.Task.PID] = true
				}
			case RecordNamespaces:
				records = append(records, rec.Namespaces)
			}
		})
		r.Close()
		if len(children) != 2 {
			t.Fatalf("namespaces %v: %d children forked, want 2", on, len(children))
		}
		if !on {
			if len(records) > 0 {
				t.Errorf("%d NAMESPACES records without Options.Namespaces", len(records))
			}
			continue
		}
		same, other := 0, 0
		for _, ns := range records {
			if !children[ns.PID] || ns.TID != ns.PID {
				continue
			}
			if ns.Count < NamespaceCount {
				t.Errorf("record of %d holds %d namespaces", ns.PID, ns.Count)
			}
			mnt := ns.Links[NamespaceMnt]
			switch {
			case mnt.Inode == self.Ino && mnt.Dev == self.Dev:
				same++
			case mnt.Inode != 0:
				other++
			}
			if ns.Links[NamespacePID].Inode == 0 || ns.Links[NamespaceUser].Inode == 0 {
				t.Errorf("record of %d: %+v", ns.PID, ns.Links)
			}
		}
		// The shell's plain child and the unshare child at its fork are
		// in this mount namespace; unshare's own is another.
		if same < 2 || other != 1 {
			t.Errorf("children's records: %d in this mount namespace (want 2), %d in another (want 1): %+v", same, other, records)
		}
	}
}
