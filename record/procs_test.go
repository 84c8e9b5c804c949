package record

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"nsprof/capture"
	"nsprof/perf"
	"nsprof/proc"
)

// forkRecord is the FORK record of child from parent (both processes).
func forkRecord(parent, child uint32, time uint64) *perf.Record {
	r := &perf.Record{Type: perf.RecordFork, Task: perf.Task{PID: child, TID: child, PPID: parent, PTID: parent, Time: time}}
	r.ID.Time = time
	return r
}

// Rings are read CPU by CPU, so a child's FORK can come before its
// parent's: the child waits for the parent and then starts with the
// parent's (inherited) mappings, rather than being described from /proc
// right away, where a short-lived child is already gone.
func TestForkBeforeParentFork(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "1"), 0o755); err != nil {
		t.Fatal(err)
	}
	maps := "55d000000000-55d000001000 r-xp 00001000 fe:00 1234 /usr/bin/grandparent\n"
	if err := os.WriteFile(filepath.Join(root, "1", "maps"), []byte(maps), 0o644); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	w, err := capture.NewWriter(&buf)
	if err != nil {
		t.Fatal(err)
	}
	tr := newTracker(w, proc.FS{Root: root})
	now := uint64(capture.Now())
	tr.scan(1, int64(now))
	tr.handle(forkRecord(100, 101, now+30)) // the grandchild's FORK, read first
	tr.flushPending(false)                  // a tick within the grace period
	tr.handle(forkRecord(1, 100, now+20))
	tr.flushPending(true)
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	r, err := capture.NewReader(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	mapped := map[int32]string{}
	for {
		f, err := r.Next()
		if err != nil {
			break
		}
		if m, ok := f.(*capture.Map); ok {
			mapped[m.PID] = m.Filename
		}
	}
	for _, pid := range []int32{1, 100, 101} {
		if mapped[pid] != "/usr/bin/grandparent" {
			t.Errorf("pid %d maps %q, want the inherited /usr/bin/grandparent (all: %v)", pid, mapped[pid], mapped)
		}
	}
}
