package record

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"nsprof/capture"
	"nsprof/container"
	"nsprof/perf"
	"nsprof/proc"
)

// nsRecord is the NAMESPACES record of task tid of process pid in
// namespaces ns.
func nsRecord(pid, tid uint32, ns taskNS, time uint64) *perf.Record {
	r := &perf.Record{Type: perf.RecordNamespaces, Namespaces: perf.Namespaces{PID: pid, TID: tid, Count: perf.NamespaceCount}}
	r.Namespaces.Links[perf.NamespaceMnt].Inode = ns.mnt
	r.Namespaces.Links[perf.NamespacePID].Inode = ns.pid
	r.Namespaces.Links[perf.NamespaceUser].Inode = ns.user
	r.ID.Time = time
	return r
}

// fakeNSProcess writes process pid under the fake /proc at root, in
// namespaces ns with root directory "/".
func fakeNSProcess(t *testing.T, root string, pid int, name string, ns taskNS) {
	t.Helper()
	fakeNSProcessIn(t, root, pid, name, ns, "/")
}

// fakeNSProcessIn is fakeNSProcess with root directory dir.
func fakeNSProcessIn(t *testing.T, root string, pid int, name string, ns taskNS, dir string) {
	t.Helper()
	if pid == 0 {
		name, dir = "self", ""
	}
	pdir := filepath.Join(root, "self")
	if pid != 0 {
		pdir = fakeProcess(t, root, pid, name, "/bin/"+name+"\x00", "")
	}
	if err := os.MkdirAll(filepath.Join(pdir, "ns"), 0o755); err != nil {
		t.Fatal(err)
	}
	links := map[string]string{
		"ns/mnt": fmt.Sprintf("mnt:[%d]", ns.mnt), "ns/pid": fmt.Sprintf("pid:[%d]", ns.pid),
		"ns/user": fmt.Sprintf("user:[%d]", ns.user),
	}
	if dir != "" {
		links["root"] = dir
	}
	for link, target := range links {
		if err := os.Symlink(target, filepath.Join(pdir, link)); err != nil {
			t.Fatal(err)
		}
	}
}

// Processes that exit before /proc is read get the container of their
// parent when they share its namespaces, else that of a live process
// read from /proc in theirs; nothing without their NAMESPACES record, nor
// from a process that has exited (its namespaces' numbers may be another's
// now), nor from a thread's record. The same processes are the peers
// whose views open their files (tracker.peer).
func TestLabelByNamespaces(t *testing.T) {
	self, err := proc.NamespaceID(proc.Self, "mnt")
	if err != nil {
		t.Fatal(err)
	}
	host := taskNS{mnt: self, pid: 4026531836, user: 4026531837}
	ctr := taskNS{mnt: 4026532100, pid: 4026532101, user: 4026531837}
	other := taskNS{mnt: 4026532200, pid: 4026532101, user: 4026531837}
	root := t.TempDir()
	fakeNSProcessIn(t, root, 0, "", host, "")   // the recorder
	fakeNSProcess(t, root, 700, "sh", ctr)      // the container's shell
	fakeNSProcess(t, root, 701, "conmon", host) // the runtime's, on the host
	fakeNSProcess(t, root, 702, "init", ctr)    // another in the container, to exit
	fakeNSProcessIn(t, root, 703, "build", host, "/srv/chroot")
	tr := fakeTracker(t, root)
	podman := &capture.ContainerInfo{Kind: container.KindPodman, ID: "58914741353e", Name: "hot"}
	tr.identify = func(pid int, now int64) *capture.ContainerInfo { return podman }
	now := uint64(capture.Now())
	for _, pid := range []int{700, 701, 702, 703} {
		tr.scan(pid, int64(now))
	}
	if c := tr.procs[701].info.Container; c == nil || c.Kind != container.KindHost {
		t.Fatalf("conmon labelled %+v, want host", c)
	}
	// Each child below exits before /proc is read: no directory of it.
	step := func(parent, child uint32, recs ...*perf.Record) {
		now += 10
		tr.handle(forkRecord(parent, child, now))
		for _, r := range recs {
			tr.handle(r)
		}
	}
	step(700, 710, nsRecord(710, 710, ctr, now+1))  // the shell's command
	step(701, 711, nsRecord(711, 711, ctr, now+1))  // podman exec's: parent on the host
	step(701, 712, nsRecord(712, 712, host, now+1)) // the runtime's own child
	step(700, 713)                                  // no record: nothing tells
	step(700, 714, nsRecord(714, 714, ctr, now+1), nsRecord(714, 714, other, now+2))
	step(701, 715, nsRecord(715, 716, ctr, now+1)) // a thread's record
	step(701, 717, nsRecord(717, 717, other, now+1))
	// Back in the host's namespaces, its parent in the container's: the
	// chroot's label (703's) is not the host's namespaces' to lend.
	step(700, 719, nsRecord(719, 719, host, now+1))
	// Whose view opens a gone process's files: its parent in its
	// namespaces, else the live process noted in them.
	for pid, want := range map[int]int{710: 700, 711: 702, 712: 701, 713: 0, 717: 0} {
		if got := tr.peer(pid); got != want {
			t.Errorf("peer of %d: %d, want %d", pid, got, want)
		}
	}
	now += 10
	tr.handle(exitRecord(702, now))
	tr.handle(exitRecord(700, now))
	step(701, 718, nsRecord(718, 718, ctr, now+1)) // its namespaces' processes have exited
	for _, pid := range []int{710, 718} {
		if got := tr.peer(pid); got != 0 {
			t.Errorf("peer of %d once the container's processes exited: %d", pid, got)
		}
	}
	got := map[int]*capture.ContainerInfo{}
	for _, pi := range trackerInfos(t, tr) {
		if pi.Container != nil { // as analyze reads them: the last label
			got[pi.PID] = pi.Container
		}
	}
	for pid, want := range map[int]string{
		700: container.KindPodman, 710: container.KindPodman, 711: container.KindPodman,
		712: container.KindHost, 713: "", 714: container.KindPodman, 715: "", 717: "", 718: "", 719: "",
	} {
		kind := ""
		if c := got[pid]; c != nil {
			kind = c.Kind
		}
		if kind != want {
			t.Errorf("pid %d labelled %q, want %q", pid, kind, want)
		}
	}
	if tr.nsLabelled != 4 {
		t.Errorf("%d processes labelled by their namespaces, want 4", tr.nsLabelled)
	}
	if ps := tr.procs[710]; ps.info.MntNS != ctr.mnt || ps.info.PidNS != ctr.pid {
		t.Errorf("710's namespaces in its line: mnt %d pid %d, want those of its record", ps.info.MntNS, ps.info.PidNS)
	}
	// A process the tracker forgets is forgotten as the one noted.
	fakeNSProcess(t, root, 705, "init", other)
	tr.scan(705, int64(now))
	if tr.byNS[other] != 705 {
		t.Fatalf("noted in its namespaces: %v", tr.byNS)
	}
	tr.forget(705)
	if _, ok := tr.byNS[other]; ok || len(tr.byNS) != 0 {
		t.Errorf("noted after the tracker forgot them: %v", tr.byNS)
	}
}

// A child a process in a PID namespace of its own created, gone before
// /proc was read, gets the pid it had there from the clone's return value
// in its parent, whichever of the FORK record and the return is read
// first; a child /proc described keeps what /proc said, and a thread
// gets no process line.
func TestGoneChildNSpid(t *testing.T) {
	ctr := taskNS{mnt: 4026532100, pid: 4026532101, user: 4026531837}
	root := t.TempDir()
	fakeNSProcess(t, root, 800, "sh", ctr)
	live := fakeProcess(t, root, 803, "live", "/bin/live\x00", "")
	if err := os.WriteFile(filepath.Join(live, "status"), []byte("Name:\tlive\nPid:\t803\nPPid:\t800\nNStgid:\t803\t9\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tr := fakeTracker(t, root)
	now := uint64(capture.Now())
	tr.scan(800, int64(now))
	tr.handle(forkRecord(800, 801, now+10)) // FORK first
	tr.cloneReturned(800, 800, 7, int64(now+11))
	tr.cloneReturned(800, 800, 8, int64(now+20)) // the return first
	tr.handle(forkRecord(800, 802, now+21))
	tr.handle(forkRecord(800, 803, now+30))
	tr.cloneReturned(800, 800, 10, int64(now+31)) // not what /proc said: kept
	thread := forkRecord(800, 804, now+40)
	thread.Task.PID, thread.Task.PPID = 800, 800
	tr.handle(thread)
	tr.cloneReturned(800, 800, 11, int64(now+41))
	got := map[int][]int{}
	for _, pi := range trackerInfos(t, tr) {
		if len(pi.NSpid) > 1 { // as analyze reads them: the last chain
			got[pi.PID] = pi.NSpid
		}
	}
	for pid, want := range map[int]int{801: 7, 802: 8, 803: 9} {
		if n := len(got[pid]); n != 2 || got[pid][0] != pid || got[pid][1] != want {
			t.Errorf("pid %d: NSpid %v, want [%d %d]", pid, got[pid], pid, want)
		}
	}
	if nspid, ok := got[804]; ok {
		t.Errorf("thread 804 got a process line with NSpid %v", nspid)
	}
}

// Recording a container's cgroup, a process /proc could not label and no
// namespace record did gets the container's label: every process recorded
// is in it (podman exec's command, whose parent is on the host and whose
// records before it joined the cgroup were not the cgroup's). So does one
// whose /proc was read but whose view could not be opened after (it
// exited in between: CI once found an exec'd command labelled unknown).
func TestCgroupLabel(t *testing.T) {
	root := t.TempDir()
	fakeNSProcess(t, root, 700, "sh", taskNS{mnt: 4026532100, pid: 4026532101, user: 4026531837})
	// 730's /proc reads, but its view cannot be opened after: it exited
	// in between.
	fakeNSProcess(t, root, 730, "sha256sum", taskNS{mnt: 4026532100, pid: 4026532101, user: 4026531837})
	tr := fakeTracker(t, root)
	podman := &capture.ContainerInfo{Kind: container.KindPodman, ID: "58914741353e", Name: "hot"}
	tr.identify = func(pid int, _ int64) *capture.ContainerInfo {
		if pid == 730 {
			return nil
		}
		return podman
	}
	now := uint64(capture.Now())
	tr.scan(700, int64(now))
	tr.handle(forkRecord(700, 720, now+10)) // gone, no record: unknown
	tr.cgroupLabel = podman
	tr.handle(forkRecord(700, 721, now+20))
	tr.handle(forkRecord(700, 730, now+30))
	got := map[int]string{}
	for _, pi := range trackerInfos(t, tr) {
		if pi.Container != nil {
			got[pi.PID] = pi.Container.Kind
		}
	}
	if got[720] != "" || got[721] != container.KindPodman || got[730] != container.KindPodman {
		t.Errorf("labels %v: want 721 and 730 alone labelled with the container", got)
	}
}
