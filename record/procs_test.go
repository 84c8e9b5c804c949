package record

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"nsprof/capture"
	"nsprof/container"
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

// Under load a child's first mapping can be read from one CPU's ring, and
// its pid scanned at a tick after it exited (no command line, no
// mappings), before its FORK is read from another: the FORK still gives
// it its parent's mappings, before its own, in the MAP frames and in the
// symbolizer that names its addresses, and its parent's name.
func TestForkAfterChildScannedGone(t *testing.T) {
	tr := parentTracker(t)
	now := uint64(capture.Now())
	tr.scan(1, int64(now))
	handleMmap(tr, 101, "[uprobes]", 0x7fffffffe000, now+30) // the child's, read first
	tr.flushPending(false)                                   // 101 is gone from the fake /proc
	if ps := tr.procs[101]; !ps.described || len(ps.maps) != 1 {
		t.Fatalf("child scanned gone: described %v, maps %v", ps.described, ps.maps)
	}
	tr.handle(forkRecord(1, 101, now+20))
	ps := tr.procs[101]
	var got []string
	for _, m := range ps.maps {
		got = append(got, m.Filename)
	}
	if !slices.Contains(got, "/usr/bin/parent") || ps.name != "/usr/bin/parent" {
		t.Errorf("child %q maps %q, want the parent's name and its /usr/bin/parent", ps.name, got)
	}
	var sym []string
	for _, m := range tr.sym.procs[101].maps {
		sym = append(sym, fmt.Sprintf("%#x", m.start))
	}
	if want := []string{"0x55d000000000"}; len(sym) < 1 || sym[0] != want[0] {
		t.Errorf("symbolizer maps of the child start %q, want the parent's %q first", sym, want)
	}
	infos := trackerInfos(t, tr)
	last := infos[len(infos)-1]
	if last.PID != 101 || last.Comm != "parent" || !slices.Equal(last.Cmdline, []string{"/usr/bin/parent"}) || strings.Contains(last.Err, errExitedUnmapped) {
		t.Errorf("child's last process line %+v, want its parent's comm and command line and no %q", last, errExitedUnmapped)
	}
}

// A child gone from /proc when its FORK is read (it exec'd and exited, as
// the go command's children do) is described by its parent's comm and
// command line, the program it ran until its exec: its comm was the
// parent's whole command line, which reports then listed its samples
// under.
func TestForkChildGoneNamedAsParent(t *testing.T) {
	tr := parentTracker(t)
	now := uint64(capture.Now())
	tr.scan(1, int64(now))
	tr.handle(forkRecord(1, 101, now+20)) // 101 is not in the fake /proc
	infos := trackerInfos(t, tr)
	last := infos[len(infos)-1]
	if last.PID != 101 || last.Comm != "parent" || !slices.Equal(last.Cmdline, []string{"/usr/bin/parent"}) {
		t.Errorf("child described as %+v, want the parent's comm %q and command line %q", last, "parent", "/usr/bin/parent")
	}
}

// parentTracker returns a fake tracker with a symbolizer over a fake /proc
// holding process 1, /usr/bin/parent, mapped at 0x55d000000000.
func parentTracker(t *testing.T) *tracker {
	t.Helper()
	root := t.TempDir()
	maps := "55d000000000-55d000001000 r-xp 00001000 fe:00 1234 /usr/bin/parent\n"
	fakeProcess(t, root, 1, "parent", "/usr/bin/parent\x00", maps)
	tr := fakeTracker(t, root)
	tr.sym = newSymbolizer()
	t.Cleanup(tr.sym.close)
	return tr
}

// The same when the child waited for its parent's description (its FORK
// read before the parent's exec), past the grace, and was scanned gone:
// the parent's description, when it comes, completes it.
func TestOrphanScannedGoneAdopted(t *testing.T) {
	tr := parentTracker(t)
	now := uint64(capture.Now())
	tr.get(1) // known from its first records, not described yet
	tr.handle(forkRecord(1, 101, now-uint64(time.Second)))
	tr.flushPending(false) // past the grace: 101 is scanned, gone from the fake /proc
	if ps := tr.procs[101]; !ps.described || len(ps.maps) != 0 {
		t.Fatalf("orphan scanned gone: described %v, maps %v", ps.described, ps.maps)
	}
	tr.scan(1, int64(now)) // the parent described at last
	var got []string
	for _, m := range tr.procs[101].maps {
		got = append(got, m.Filename)
	}
	if !slices.Contains(got, "/usr/bin/parent") {
		t.Errorf("child maps %q, want the parent's /usr/bin/parent", got)
	}
	if p := tr.sym.procs[101]; p == nil || len(p.maps) == 0 {
		t.Errorf("the symbolizer has no mappings of the child")
	}
}

// A process found without a command line (in the middle of an exec) is
// looked at again at the next tick, and at the end of the recording it
// is described whatever /proc says.
func TestScanDefersEmptyCommandLine(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "300")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "status"), []byte("Name:\tprog\nPid:\t300\nPPid:\t1\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "cmdline"), nil, 0o644)
	var buf bytes.Buffer
	w, err := capture.NewWriter(&buf)
	if err != nil {
		t.Fatal(err)
	}
	tr := newTracker(w, proc.FS{Root: root})
	tr.scan(300, 1)
	if tr.procs[300].described {
		t.Fatal("described at once with an empty command line")
	}
	os.WriteFile(filepath.Join(dir, "cmdline"), []byte("/usr/bin/prog\x00arg\x00"), 0o644)
	tr.flushPending(false)
	if !tr.procs[300].described || tr.procs[300].name != "/usr/bin/prog arg" {
		t.Errorf("after a tick: described %v as %q", tr.procs[300].described, tr.procs[300].name)
	}
	// Empty for good, at the end: described anyway.
	os.MkdirAll(filepath.Join(root, "301"), 0o755)
	os.WriteFile(filepath.Join(root, "301", "status"), []byte("Name:\tgone\nPid:\t301\nPPid:\t1\n"), 0o644)
	os.WriteFile(filepath.Join(root, "301", "cmdline"), nil, 0o644)
	tr.sampled(301, int64(capture.Now()))
	tr.flushPending(true)
	if !tr.procs[301].described {
		t.Error("not described by the final flush")
	}
	// Gone by the next look: described as first seen, with the mappings
	// read then, rather than nameless.
	d302 := filepath.Join(root, "302")
	os.MkdirAll(d302, 0o755)
	os.WriteFile(filepath.Join(d302, "status"), []byte("Name:\tshort\nPid:\t302\nPPid:\t1\n"), 0o644)
	os.WriteFile(filepath.Join(d302, "cmdline"), nil, 0o644)
	os.WriteFile(filepath.Join(d302, "maps"), []byte("55d000000000-55d000001000 r-xp 00001000 fe:00 1234 /usr/bin/short\n"), 0o644)
	tr.scan(302, int64(capture.Now()))
	if tr.procs[302].described {
		t.Fatal("described at once with an empty command line")
	}
	os.RemoveAll(d302)
	tr.flushPending(false)
	ps := tr.procs[302]
	if !ps.described || ps.name != "short" || len(ps.maps) != 1 || ps.maps[0].Filename != "/usr/bin/short" {
		t.Errorf("gone after the first look: described %v as %q with maps %v", ps.described, ps.name, ps.maps)
	}
}

// A process that starts to exit between glance and its scan shows its name
// but no command line and no mappings, as in the middle of an exec; its
// PF_EXITING flag tells the two apart. It is described at once, with the
// command line and mappings glance read, not deferred until it is gone and
// left without mappings for its samples. A zombie likewise; a process in
// the middle of an exec is still deferred.
func TestScanExitingUsesGlance(t *testing.T) {
	// stat writes /proc/PID/stat with state and flags (the 9th field).
	stat := func(dir string, pid int, state byte, flags uint64) {
		line := fmt.Sprintf("%d (quick) %c 1 %d %d 0 -1 %d 0 0 0 0 0 0 0 0 20 0 1 0 100 1000 10\n", pid, state, pid, pid, flags)
		if err := os.WriteFile(filepath.Join(dir, "stat"), []byte(line), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	const exe = "55d000000000-55d000001000 r-xp 00001000 fe:00 1234 /usr/bin/quick\n"
	for _, c := range []struct {
		name     string
		state    byte
		flags    uint64
		deferred bool
	}{
		{"exiting", 'R', pfExiting | 0x400000, false},
		{"zombie", 'Z', pfExiting | 0x400000, false},
		{"mid-exec", 'R', 0x400000, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			root := t.TempDir()
			dir := fakeProcess(t, root, 400, "quick", "/usr/bin/quick\x00-n\x00", exe)
			stat(dir, 400, 'R', 0x400000)
			tr := fakeTracker(t, root)
			tr.glance([]int{400}, 1)
			// By its scan, it is past exit_mm (or mid-exec).
			for _, f := range []string{"cmdline", "maps"} {
				if err := os.WriteFile(filepath.Join(dir, f), nil, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			stat(dir, 400, c.state, c.flags)
			tr.scan(400, 2)
			ps := tr.procs[400]
			if c.deferred {
				if ps.described {
					t.Errorf("described at once, as %q with maps %v; want it looked at again", ps.name, ps.maps)
				}
				return
			}
			if !ps.described || ps.name != "/usr/bin/quick -n" || len(ps.maps) != 1 || ps.maps[0].Filename != "/usr/bin/quick" {
				t.Errorf("described %v as %q with maps %v; want /usr/bin/quick -n with glance's mapping", ps.described, ps.name, ps.maps)
			}
			if infos := trackerInfos(t, tr); len(infos) != 1 || infos[0].Err != "" {
				t.Errorf("process info %+v, want one line without error", infos)
			}
			if _, pending := tr.pending[400]; pending {
				t.Error("still pending")
			}
		})
	}
}

// A process already past exit_mm when glance looked (its command line read
// a moment before its mappings were gone), then exiting or gone by its
// scan, is described without mappings, and its process info says why.
func TestScanExitedUnmapped(t *testing.T) {
	for _, gone := range []bool{false, true} {
		t.Run(fmt.Sprintf("gone=%v", gone), func(t *testing.T) {
			root := t.TempDir()
			dir := fakeProcess(t, root, 401, "quick", "/usr/bin/quick\x00", "")
			tr := fakeTracker(t, root)
			tr.glance([]int{401}, 1)
			if gone {
				if err := os.RemoveAll(dir); err != nil {
					t.Fatal(err)
				}
			} else {
				line := "401 (quick) R 1 401 401 0 -1 4194308 0 0 0 0 0 0 0 0 20 0 1 0 100 1000 10\n" // flags 0x400004: PF_EXITING
				for f, b := range map[string]string{"stat": line, "cmdline": ""} {
					if err := os.WriteFile(filepath.Join(dir, f), []byte(b), 0o644); err != nil {
						t.Fatal(err)
					}
				}
			}
			tr.scan(401, 2)
			ps := tr.procs[401]
			if !ps.described || ps.name != "/usr/bin/quick" || len(ps.maps) != 0 {
				t.Errorf("described %v as %q with maps %v", ps.described, ps.name, ps.maps)
			}
			if infos := trackerInfos(t, tr); len(infos) != 1 || infos[0].Err != errExitedUnmapped {
				t.Errorf("process info %+v, want Err %q", infos, errExitedUnmapped)
			}
		})
	}
}

// /proc/PID/maps shows the files of a chrooted process from the reader's
// root; its MAP frames name them as the process (and perf's MMAP records,
// and its debug links) does: without the root's prefix. A file outside its
// root keeps the path /proc shows.
func TestScanMapsInRoot(t *testing.T) {
	root := t.TempDir()
	jail := t.TempDir() // the link must lead somewhere: it is stat'ed
	maps := "55d000000000-55d000001000 r-xp 00001000 fe:00 1234 " + jail + "/bin/hot\n" +
		"7f0000000000-7f0000001000 r-xp 00000000 fe:00 1235 " + jail + "break/lib/x.so\n" +
		"7f0000002000-7f0000003000 r-xp 00000000 fe:00 1236 " + jail + "/lib/gone.so (deleted)\n"
	dir := fakeProcess(t, root, 500, "hot", "/bin/hot\x00", maps)
	if err := os.Symlink(jail, filepath.Join(dir, "root")); err != nil {
		t.Fatal(err)
	}
	tr := fakeTracker(t, root)
	tr.scan(500, 1)
	var got []string
	for _, m := range tr.procs[500].maps {
		got = append(got, m.Filename)
	}
	want := []string{"/bin/hot", jail + "break/lib/x.so", "/lib/gone.so (deleted)"}
	if !slices.Equal(got, want) {
		t.Errorf("MAP files %q, want %q", got, want)
	}
}

// fakeProcess writes pid's status, cmdline (argv NUL-separated) and maps
// under a fake /proc at root and returns its directory.
func fakeProcess(t *testing.T, root string, pid int, name, argv, maps string) string {
	t.Helper()
	dir := filepath.Join(root, strconv.Itoa(pid))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	status := fmt.Sprintf("Name:\t%s\nPid:\t%d\nPPid:\t1\n", name, pid)
	for file, b := range map[string]string{"status": status, "cmdline": argv, "maps": maps} {
		if err := os.WriteFile(filepath.Join(dir, file), []byte(b), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// fakeTracker returns a tracker over the fake /proc at root, writing its
// capture to fakeOut[tracker].
func fakeTracker(t *testing.T, root string) *tracker {
	t.Helper()
	out := new(bytes.Buffer)
	w, err := capture.NewWriter(out)
	if err != nil {
		t.Fatal(err)
	}
	tr := newTracker(w, proc.FS{Root: root})
	fakeOut[tr] = out
	t.Cleanup(func() { delete(fakeOut, tr) })
	return tr
}

// fakeOut holds what each fake tracker wrote.
var fakeOut = map[*tracker]*bytes.Buffer{}

// trackerFrames returns the frames a fake tracker wrote so far.
func trackerFrames(t *testing.T, tr *tracker) []capture.Frame {
	t.Helper()
	if err := tr.w.Flush(); err != nil {
		t.Fatal(err)
	}
	r, err := capture.NewReader(bytes.NewReader(fakeOut[tr].Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	var out []capture.Frame
	for {
		f, err := r.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, f)
	}
}

// trackerInfos returns the process info lines a fake tracker wrote.
func trackerInfos(t *testing.T, tr *tracker) []capture.ProcessInfo {
	t.Helper()
	if err := tr.w.CloseProcessFile(); err != nil {
		t.Fatal(err)
	}
	var files capture.Files
	for _, f := range trackerFrames(t, tr) {
		if c, ok := f.(*capture.FileChunk); ok {
			files.Add(c)
		}
	}
	infos, _, err := capture.ReadProcessFile(&files)
	if err != nil {
		t.Fatal(err)
	}
	return infos
}

// handleExec and handleMmap feed the tracker pid's exec COMM record and
// an executable MMAP2 record (inode addr), at time at.
func handleExec(tr *tracker, pid uint32, comm string, at uint64) {
	r := &perf.Record{Type: perf.RecordComm, Comm: perf.Comm{PID: pid, TID: pid, Comm: []byte(comm), Exec: true}}
	r.ID.Time = at
	tr.handle(r)
}

func handleMmap(tr *tracker, pid uint32, file string, addr, at uint64) {
	r := &perf.Record{Type: perf.RecordMmap2, Mmap: perf.Mmap{PID: pid, TID: pid, Addr: addr, Len: 0x1000, Ino: addr, Filename: []byte(file)}}
	r.ID.Time = at
	tr.handle(r)
}

// A launcher deferred at its exec (empty command line) that execs again
// within the tick, as `unshare --root DIR CMD` does after its chroot: the
// second exec must reopen the process's file view, or the new image's
// debug files are searched in the launcher's root.
func TestExecWhileDeferredReopensView(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	dir := fakeProcess(t, root, 500, "sh", "sh\x00", "")
	tr := fakeTracker(t, root)
	tr.sym = newSymbolizer()
	defer tr.sym.close()
	opens := 0
	tr.sym.open = func(int) (*container.Process, error) {
		opens++
		return container.Open(os.Getpid())
	}
	now := uint64(capture.Now())
	tr.scan(500, int64(now))
	os.WriteFile(filepath.Join(dir, "cmdline"), nil, 0o644) // mid-exec from here on
	handleExec(tr, 500, "unshare", now+10)
	handleMmap(tr, 500, self, 0x400000, now+11)
	if opens != 1 {
		t.Fatalf("%d opens after the first exec's mapping, want 1", opens)
	}
	handleExec(tr, 500, "hot", now+20) // within the same tick: still deferred
	handleMmap(tr, 500, filepath.Join(filepath.Dir(self), "hot"), 0x401000, now+21)
	if opens != 2 {
		t.Errorf("%d opens after the second exec's mapping, want 2 (the view was not reopened)", opens)
	}
}

// Rings are read CPU by CPU: the target's exec and mappings (CPU 0) can be
// read before the launcher's earlier exec and mappings (CPU 1), as with
// `unshare --root DIR /bin/hot`. The launcher's, read last, must not
// replace the target's mappings.
func TestExecReadOutOfOrder(t *testing.T) {
	root := t.TempDir()
	fakeProcess(t, root, 600, "hot", "/bin/hot\x00", "")
	tr := fakeTracker(t, root)
	tr.sym = newSymbolizer()
	defer tr.sym.close()
	tr.sym.open = func(int) (*container.Process, error) { return nil, errors.New("gone") }
	now := uint64(capture.Now())
	handleExec(tr, 600, "hot", now+20) // CPU 0's ring, read first
	handleMmap(tr, 600, "/bin/hot", 0x401000, now+21)
	handleExec(tr, 600, "unshare", now+10) // CPU 1's ring
	handleMmap(tr, 600, "/usr/bin/unshare", 0x55000000, now+11)
	var files []string
	for _, m := range tr.sym.procs[600].maps {
		files = append(files, m.obj.path)
	}
	if len(files) != 1 || files[0] != "/bin/hot" {
		t.Errorf("symbolizer maps %v, want [/bin/hot]", files)
	}
	files = files[:0]
	for _, m := range tr.procs[600].maps {
		files = append(files, m.Filename)
	}
	if len(files) != 1 || files[0] != "/bin/hot" {
		t.Errorf("process maps %v, want [/bin/hot]", files)
	}
}

// The start of a system-wide recording glances at every process before
// describing them one by one: one that exits in between is described
// from the glance, not nameless.
func TestGlanceDescribesExitedProcess(t *testing.T) {
	root := t.TempDir()
	dir := fakeProcess(t, root, 700, "worker", "/usr/bin/worker\x00-j2\x00", "55d000000000-55d000001000 r-xp 00001000 fe:00 1234 /usr/bin/worker\n")
	tr := fakeTracker(t, root)
	now := int64(capture.Now())
	tr.glance([]int{700}, now)
	os.RemoveAll(dir)
	tr.scan(700, now)
	ps := tr.procs[700]
	if !ps.described || ps.name != "/usr/bin/worker -j2" || len(ps.maps) != 1 || ps.maps[0].Filename != "/usr/bin/worker" {
		t.Errorf("described %v as %q with maps %v", ps.described, ps.name, ps.maps)
	}
}

// TestPrivateProcesses: what --redact-cmdlines cuts from a process's
// command line it keeps out of the capture elsewhere too (the paths of
// --blocking's descriptors): another user's process, or one not described
// yet, is private while redaction is on; the recording user's is not.
func TestPrivateProcesses(t *testing.T) {
	root := t.TempDir()
	for pid, uid := range map[int]int{400: 1000, 401: 2000} {
		dir := filepath.Join(root, strconv.Itoa(pid))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(dir, "status"), fmt.Appendf(nil, "Name:\tprog\nPid:\t%d\nPPid:\t1\nUid:\t%d\t%[2]d\t%[2]d\t%[2]d\n", pid, uid), 0o644)
		os.WriteFile(filepath.Join(dir, "cmdline"), []byte("/usr/bin/prog\x00--secret\x00"), 0o644)
	}
	for _, tc := range []struct {
		mode         Redaction
		mine, others bool
	}{{RedactOthers, false, true}, {RedactAll, true, true}, {RedactNone, false, false}} {
		var buf bytes.Buffer
		w, err := capture.NewWriter(&buf)
		if err != nil {
			t.Fatal(err)
		}
		tr := newTracker(w, proc.FS{Root: root})
		tr.redact = &redactor{mode: tc.mode, users: []uint32{1000}}
		if got := tr.private(400); got != (tc.mode != RedactNone) {
			t.Errorf("%v: undescribed process private %t", tc.mode, got)
		}
		tr.scan(400, 1)
		tr.scan(401, 1)
		if got := tr.private(400); got != tc.mine {
			t.Errorf("%v: the recording user's process private %t, want %t", tc.mode, got, tc.mine)
		}
		if got := tr.private(401); got != tc.others {
			t.Errorf("%v: another user's process private %t, want %t", tc.mode, got, tc.others)
		}
	}
}

// exitRecord is the EXIT record of process pid (its main thread).
func exitRecord(pid uint32, time uint64) *perf.Record {
	r := &perf.Record{Type: perf.RecordExit, Task: perf.Task{PID: pid, TID: pid, PPID: 1, PTID: 1, Time: time}}
	r.ID.Time = time
	return r
}

// A process that exited keeps its mappings for a grace, for a child's
// FORK read late from another CPU's ring, and then lets go of them: over
// a long recording of processes coming and going they were most of what
// each one left in memory. After a longer grace the tracker forgets the
// process (the rest of its state grew a long recording by 2 MB a minute),
// and a new process given its pid again is described as a new one: it
// was taken for the exited one, already described.
func TestExitedForgetsMaps(t *testing.T) {
	tr := parentTracker(t)
	now := uint64(capture.Now())
	tr.scan(1, int64(now))
	tr.handle(forkRecord(1, 100, now+10))
	tr.sampled(100, int64(now+12))
	tr.handle(exitRecord(100, now+20))
	start := time.Now()
	tr.forgetExited(start)
	tr.handle(forkRecord(100, 101, now+15)) // read after the parent's EXIT
	if ps := tr.procs[101]; !ps.described || len(ps.maps) != 1 || ps.maps[0].Filename != "/usr/bin/parent" {
		t.Fatalf("child forked before its parent's exit, read after: maps %v, want the parent's", ps.maps)
	}
	tr.forgetExited(start.Add(mapsGrace))
	if ps := tr.procs[100]; ps == nil || ps.maps != nil || ps.have != nil {
		t.Fatalf("after the mappings' grace: state %v", ps)
	}
	if ps := tr.procs[1]; len(ps.maps) != 1 {
		t.Errorf("the live parent: %d mappings, want 1", len(ps.maps))
	}
	if len(tr.exits) != 1 {
		t.Errorf("%d exits queued, want 1 (forgotten after exitGrace)", len(tr.exits))
	}
	tr.forgetExited(start.Add(exitGrace))
	if ps := tr.procs[100]; ps != nil {
		t.Errorf("after exitGrace: the exited process still held")
	}
	if len(tr.exits) != 0 || tr.mapsGone != 0 {
		t.Errorf("%d exits still queued (%d without mappings)", len(tr.exits), tr.mapsGone)
	}
	if got := len(tr.withSamples) + tr.sampledGone; got != 1 {
		t.Errorf("processes with samples: %d, want 1", got)
	}
	// pid 100 again, a new child of 1: described as a new process.
	seen := tr.seen
	tr.handle(forkRecord(1, 100, now+uint64(6*time.Second)))
	if ps := tr.procs[100]; ps == nil || !ps.described || ps.hasExited() || len(ps.maps) != 1 {
		t.Fatalf("pid 100 used again: state %+v, want a new process described with its parent's mappings", ps)
	}
	if tr.seen != seen+1 {
		t.Errorf("processes described: %d, want %d", tr.seen, seen+1)
	}
}

// A pid given to a new process within the grace an exited one is kept
// for (its FORK later than the exit) is a new process, described as one,
// and the exited one's queued exit does not forget it; the exited one's
// own FORK read after its EXIT is not a new process.
func TestPIDReusedWithinGrace(t *testing.T) {
	tr := parentTracker(t)
	now := uint64(capture.Now())
	tr.scan(1, int64(now))
	tr.sampled(100, int64(now+12)) // before its FORK is read
	tr.handle(exitRecord(100, now+20))
	tr.handle(forkRecord(1, 100, now+10)) // its own FORK, read late
	seen := tr.seen
	if ps := tr.procs[100]; ps == nil || !ps.described || !ps.hasExited() {
		t.Fatalf("process forked before its EXIT was read: %+v, want described and exited", ps)
	}
	tr.handle(forkRecord(1, 100, now+30))
	ps := tr.procs[100]
	if ps == nil || !ps.described || ps.hasExited() || len(ps.maps) != 1 {
		t.Fatalf("pid 100 given again within the grace: %+v, want a new process with its parent's mappings", ps)
	}
	if tr.seen != seen+1 {
		t.Errorf("processes described: %d, want %d", tr.seen, seen+1)
	}
	tr.forgetExited(time.Now().Add(exitGrace))
	if tr.procs[100] != ps || len(ps.maps) != 1 {
		t.Errorf("the first process's exit forgot the second, or its mappings")
	}
	if got := len(tr.withSamples) + tr.sampledGone; got != 1 {
		t.Errorf("processes with samples: %d, want 1", got)
	}
}

// leaderExited returns a tracker that read the fork of process 100 at
// now+10 and its leader's EXIT at now+20, while /proc (its task directory
// tasks) shows its thread 101 still there; start is when the exit was
// read.
func leaderExited(t *testing.T) (tr *tracker, now uint64, tasks string, start time.Time) {
	t.Helper()
	tr = parentTracker(t)
	now = uint64(capture.Now())
	tr.scan(1, int64(now))
	tr.handle(forkRecord(1, 100, now+10))
	tasks = filepath.Join(tr.fs.Root, "100", "task")
	for _, tid := range []string{"100", "101"} {
		if err := os.MkdirAll(filepath.Join(tasks, tid), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	tr.handle(exitRecord(100, now+20)) // the leader's
	return tr, now, tasks, time.Now()
}

// A process's EXIT record is its leader thread's: while other threads of
// it run on, it is kept with its mappings (a child they fork inherits
// them), and it exits with the last of them, a second EXIT frame saying
// when.
func TestLeaderExitThreadsRunOn(t *testing.T) {
	tr, now, tasks, start := leaderExited(t)
	tr.forgetExited(start.Add(mapsGrace))
	tr.forgetExited(start.Add(exitGrace))
	ps := tr.procs[100]
	if ps == nil || ps.hasExited() || !ps.lingering || len(ps.maps) != 1 {
		t.Fatalf("leader exited, thread 101 running: state %+v, want kept with its mappings", ps)
	}
	tr.handle(forkRecord(100, 102, now+30)) // forked by thread 101
	if c := tr.procs[102]; c == nil || !c.described || len(c.maps) != 1 {
		t.Fatalf("child of the running thread: %+v, want its parent's mappings", c)
	}
	if err := os.RemoveAll(filepath.Join(tasks, "101")); err != nil {
		t.Fatal(err)
	}
	thread := &perf.Record{Type: perf.RecordExit, Task: perf.Task{PID: 100, TID: 101, PPID: 100, PTID: 100, Time: now + 40}}
	thread.ID.Time = now + 40
	tr.handle(thread)
	if !ps.hasExited() || ps.lingering || ps.exitAt != int64(now+40) {
		t.Fatalf("after the last thread's EXIT: exited %t, lingering %t, at %d; want exited at %d", ps.hasExited(), ps.lingering, ps.exitAt, now+40)
	}
	tr.forgetExited(time.Now().Add(exitGrace))
	if tr.procs[100] != nil {
		t.Error("the process was not forgotten after its last thread's exit")
	}
	// Its EXIT frames: the leader's, and the last thread's, which ends
	// it on a timeline.
	var exits []int64
	for _, f := range trackerFrames(t, tr) {
		if e, ok := f.(*capture.Exit); ok && e.PID == 100 {
			exits = append(exits, e.Time)
		}
	}
	if want := []int64{int64(now + 20), int64(now + 40)}; !slices.Equal(exits, want) {
		t.Errorf("EXIT frames of the process at %v, want %v", exits, want)
	}
}

// TestLingererLastExitLost: a process kept past its leader's EXIT whose
// last thread's EXIT record is never read ends when two looks at /proc,
// exitGrace apart, found no thread of it: with its second EXIT frame at
// the first of them, counted, and then forgotten. One still running is
// kept.
func TestLingererLastExitLost(t *testing.T) {
	tr, now, tasks, start := leaderExited(t)
	tr.forgetExited(start.Add(mapsGrace))
	tr.forgetExited(start.Add(mapsGrace + exitGrace))
	tr.forgetExited(start.Add(mapsGrace + 2*exitGrace))
	ps := tr.procs[100]
	if ps == nil || ps.hasExited() || !ps.lingering || len(ps.maps) != 1 || tr.exitsInferred != 0 {
		t.Fatalf("thread 101 running through three looks: state %+v, %d exits inferred; want kept with its mappings", ps, tr.exitsInferred)
	}
	// Thread 101 exits; its EXIT record is lost.
	if err := os.RemoveAll(filepath.Join(tasks, "101")); err != nil {
		t.Fatal(err)
	}
	before := capture.Now()
	tr.forgetExited(start.Add(mapsGrace + 3*exitGrace))
	after := capture.Now()
	if ps.hasExited() || !ps.lingering {
		t.Fatal("ended at the first look that found no thread: its EXIT record may still wait in a ring")
	}
	tr.forgetExited(start.Add(mapsGrace + 4*exitGrace))
	if !ps.hasExited() || ps.lingering || tr.exitsInferred != 1 {
		t.Fatalf("after two looks finding no thread: exited %t, lingering %t, %d exits inferred; want ended, 1", ps.hasExited(), ps.lingering, tr.exitsInferred)
	}
	var exits []int64
	for _, f := range trackerFrames(t, tr) {
		if e, ok := f.(*capture.Exit); ok && e.PID == 100 {
			exits = append(exits, e.Time)
		}
	}
	if len(exits) != 2 || exits[0] != int64(now+20) || exits[1] < before || exits[1] > after {
		t.Errorf("EXIT frames of the process at %v, want %d then one in [%d, %d] (the first look without threads)", exits, now+20, before, after)
	}
	tr.forgetExited(time.Now().Add(exitGrace))
	if tr.procs[100] != nil || len(tr.lingerers) != 0 {
		t.Errorf("not forgotten after its inferred exit: %+v, lingerers %v", tr.procs[100], tr.lingerers)
	}
}

// TestKernelThreadFewerReads: a kernel thread (status's Kthread: 1) is
// described from its status and namespaces, without its command line,
// executable, cgroups or mappings (it has none of its own), by glance and
// scan alike; a user process whose parent is kthreadd (a usermode helper)
// is not taken for one.
func TestKernelThreadFewerReads(t *testing.T) {
	root := t.TempDir()
	kdir := fakeProcess(t, root, 700, "kworker/0:1", "", "")
	status := "Name:\tkworker/0:1\nPid:\t700\nPPid:\t2\nKthread:\t1\n"
	if err := os.WriteFile(filepath.Join(kdir, "status"), []byte(status), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(kdir, "ns"), 0o755); err != nil {
		t.Fatal(err)
	}
	for link, target := range map[string]string{"ns/mnt": "mnt:[4026531840]", "ns/pid": "pid:[4026531836]", "root": "/"} {
		if err := os.Symlink(target, filepath.Join(kdir, link)); err != nil {
			t.Fatal(err)
		}
	}
	// Unreadable as files: reading them would be noted in Err.
	for _, f := range []string{"cmdline", "maps"} {
		os.Remove(filepath.Join(kdir, f))
		if err := os.Mkdir(filepath.Join(kdir, f), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	helper := fakeProcess(t, root, 701, "modprobe", "/sbin/modprobe\x00-q\x00x\x00", "")
	for pid, dir := range map[int]string{700: kdir, 701: helper} {
		if err := os.WriteFile(filepath.Join(dir, "cgroup"), []byte("0::/\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if pid == 701 {
			st := "Name:\tmodprobe\nPid:\t701\nPPid:\t2\nKthread:\t0\n"
			if err := os.WriteFile(filepath.Join(dir, "status"), []byte(st), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	tr := fakeTracker(t, root)
	tr.glance([]int{700, 701}, 1)
	if e := tr.procs[700].early; e == nil || e.Comm != "kworker/0:1" || len(e.Cmdline) != 0 || tr.procs[700].earlyMaps != nil {
		t.Fatalf("glance at the kernel thread: %+v, want its name alone", e)
	}
	tr.scan(700, 1)
	tr.scan(701, 1)
	k := tr.procs[700]
	if k == nil || !k.described || k.info.Err != "" || k.info.Comm != "kworker/0:1" || len(k.info.Cgroups) != 0 || k.name != "kworker/0:1" {
		t.Errorf("kernel thread described as %+v (name %q), want its name, no error, no cgroups read", k.info, k.name)
	}
	h := tr.procs[701]
	if h == nil || !h.described || !slices.Equal(h.info.Cmdline, []string{"/sbin/modprobe", "-q", "x"}) || len(h.info.Cgroups) != 1 {
		t.Errorf("usermode helper described as %+v, want its command line and cgroup read", h.info)
	}

	// Glanced at and scanned in one pass, the kernel thread's status is
	// read once: changed in between, the scan still has glance's name.
	tr = fakeTracker(t, root)
	tr.glance([]int{700}, 2)
	renamed := strings.Replace(status, "kworker/0:1", "kworker/0:1-events", 1)
	if err := os.WriteFile(filepath.Join(kdir, "status"), []byte(renamed), 0o644); err != nil {
		t.Fatal(err)
	}
	tr.scan(700, 2)
	if k := tr.procs[700]; k == nil || k.info.Comm != "kworker/0:1" || k.info.MntNS == 0 {
		t.Errorf("kernel thread scanned after glance: %+v, want glance's name and its namespaces read", k.info)
	}
	// Gone between the two: described as glance saw it, without errors.
	tr = fakeTracker(t, root)
	tr.glance([]int{700}, 3)
	if err := os.RemoveAll(kdir); err != nil {
		t.Fatal(err)
	}
	tr.scan(700, 3)
	if k := tr.procs[700]; k == nil || !k.described || k.info.Comm != "kworker/0:1-events" || k.info.Err != "" {
		t.Errorf("kernel thread gone after glance: %+v, want described by glance's look, no error", k.info)
	}
}

// A process in the recorder's own mount namespace and root, in no
// container's cgroup, is labelled a host process without being opened:
// a system-wide recording sees hundreds start a second, and opening one
// read a dozen /proc files. Another mount namespace is opened.
func TestDescribeHostWithoutOpening(t *testing.T) {
	self, err := proc.NamespaceID(proc.Self, "mnt")
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	for pid, mnt := range map[int]uint64{600: self, 601: self + 1} {
		dir := fakeProcess(t, root, pid, "p", "/bin/p\x00", "")
		if err := os.MkdirAll(filepath.Join(dir, "ns"), 0o755); err != nil {
			t.Fatal(err)
		}
		for link, target := range map[string]string{"ns/mnt": fmt.Sprintf("mnt:[%d]", mnt), "ns/pid": "pid:[4026531836]", "root": "/"} {
			if err := os.Symlink(target, filepath.Join(dir, link)); err != nil {
				t.Fatal(err)
			}
		}
	}
	tr := fakeTracker(t, root)
	var opened []int
	tr.identify = func(pid int, now int64) *capture.ContainerInfo {
		opened = append(opened, pid)
		return &capture.ContainerInfo{Kind: container.KindNamespace}
	}
	tr.scan(600, 1)
	tr.scan(601, 1)
	if !slices.Equal(opened, []int{601}) {
		t.Errorf("processes opened to identify them: %v, want only 601 (another mount namespace)", opened)
	}
	for pid, want := range map[int]string{600: container.KindHost, 601: container.KindNamespace} {
		ps := tr.procs[pid]
		if ps.info.Err != "" || ps.info.Container == nil || ps.info.Container.Kind != want {
			t.Errorf("pid %d: container %+v (err %q), want kind %q", pid, ps.info.Container, ps.info.Err, want)
		}
	}
}

// A process forgotten after its exit that lived in a PID namespace of its
// own leaves what records read late ask of it (the pid it knew itself by,
// for its JIT map in the bundle; its namespace, for a --memprof ring
// drained late), until a new process gets its pid.
func TestForgottenKeepsNamespacePID(t *testing.T) {
	tr := parentTracker(t)
	const pidns = 4026532000
	ps := tr.get(200)
	ps.described, ps.exitAt, ps.nspid, ps.pidns = true, 1, 5, pidns
	tr.get(201).exitAt = 1 // in the recorder's namespace: nothing kept
	start := time.Now()
	tr.exits = append(tr.exits, exitedProc{pid: 200, at: start, rec: 1}, exitedProc{pid: 201, at: start, rec: 1})
	tr.forgetExited(start.Add(exitGrace))
	if tr.procs[200] != nil || tr.procs[201] != nil {
		t.Fatalf("after exitGrace: the exited processes still held")
	}
	if n, ns := tr.nsPID(200), tr.pidNS(200); n != 5 || ns != pidns {
		t.Errorf("forgotten process in a PID namespace: nsPID %d, pidNS %d; want 5, %d", n, ns, pidns)
	}
	if _, ok := tr.gone[201]; ok || len(tr.gone) != 1 {
		t.Errorf("kept %v; want process 200 alone", tr.gone)
	}
	tr.get(200) // the pid given to a new process
	if n, ns := tr.nsPID(200), tr.pidNS(200); n != 0 || ns != 0 || len(tr.gone) != 0 {
		t.Errorf("pid used again: nsPID %d, pidNS %d, %d kept; want none", n, ns, len(tr.gone))
	}
}
