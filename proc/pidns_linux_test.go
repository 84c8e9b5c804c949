package proc

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"nsprof/internal/testutils"
)

// TestLivePIDNamespace starts sleep as PID 1 of a new PID and mount
// namespace with util-linux unshare and reads it from the host and through
// the namespace's own proc mount. In CI (testutils.InCI) any failure to create
// the namespace fails the test; elsewhere a missing unshare or EPERM skips it.
func TestLivePIDNamespace(t *testing.T) {
	unshare := testutils.LookPathOrSkip(t, "unshare")
	args := []string{"--pid", "--fork", "--mount-proc", "--kill-child", "sleep", "5"}
	if os.Geteuid() != 0 {
		args = append([]string{"--user", "--map-root-user"}, args...)
	}
	cmd := exec.Command(unshare, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	var waitErr error
	go func() { waitErr = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		cmd.Process.Kill() // --kill-child takes sleep along
		<-exited
	})

	inner := findChild(t, cmd.Process.Pid, "sleep", exited, func() {
		msg := fmt.Sprintf("unshare %s: %v: %s", strings.Join(args, " "), waitErr, stderr.String())
		if strings.Contains(stderr.String(), "Operation not permitted") {
			testutils.RequireCI(t, "creating a PID namespace: %s", msg)
		}
		t.Fatal(msg)
	})

	// From the host: a two-element chain ending in 1.
	st, err := ReadStatus(inner)
	if err != nil {
		t.Fatal(err)
	}
	if want := []int{inner, 1}; !reflect.DeepEqual(st.NSpid, want) || !reflect.DeepEqual(st.NStgid, want) ||
		st.InnermostPid() != 1 || st.PPid != cmd.Process.Pid {
		t.Errorf("status of inner sleep: NSpid %v NStgid %v PPid %d; want %v, parent %d",
			st.NSpid, st.NStgid, st.PPid, want, cmd.Process.Pid)
	}
	threads, err := ThreadNSpids(inner)
	if want := []ThreadNSpid{{TID: inner, NSTID: 1}}; err != nil || !reflect.DeepEqual(threads, want) {
		t.Errorf("ThreadNSpids = %v, %v; want %v", threads, err, want)
	}
	for _, ns := range []string{"mnt", "pid"} {
		ours, err1 := NamespaceID(Self, ns)
		theirs, err2 := NamespaceID(inner, ns)
		if err1 != nil || err2 != nil || ours == theirs {
			t.Errorf("%s namespace: ours %d (%v), inner %d (%v); want different", ns, ours, err1, theirs, err2)
		}
	}
	ourNet, _ := NamespaceID(Self, "net")
	if theirs, err := NamespaceID(inner, "net"); err != nil || theirs != ourNet {
		t.Errorf("net namespace: ours %d, inner %d (%v); want equal", ourNet, theirs, err)
	}

	// The namespace's private /proc mount is a different proc instance,
	// mounted over the copy of ours.
	procDev := func(pid int) Dev {
		mounts, err := ReadMountInfo(pid)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range slices.Backward(mounts) {
			if m.MountPoint == "/proc" && m.FSType == "proc" {
				return m.Dev
			}
		}
		t.Fatalf("no /proc in mountinfo of pid %d", pid)
		return Dev{}
	}
	if ours, theirs := procDev(Self), procDev(inner); ours == theirs {
		t.Errorf("inner /proc has our device %v", ours)
	}

	// Through the namespace's own proc mount, sleep is alone and is PID 1.
	innerFS := FS{Root: fmt.Sprintf("/proc/%d/root/proc", inner)}
	if pids, err := innerFS.PIDs(); err != nil || !reflect.DeepEqual(pids, []int{1}) {
		t.Errorf("PIDs inside = %v, %v; want [1]", pids, err)
	}
	ist, err := innerFS.ReadStatus(1)
	if err != nil || ist.Pid != 1 || ist.PPid != 0 || !reflect.DeepEqual(ist.NSpid, []int{1}) {
		t.Errorf("status inside = %+v, %v", ist, err)
	}
	if threads, err := innerFS.ThreadNSpids(1); err != nil || !reflect.DeepEqual(threads, []ThreadNSpid{{1, 1}}) {
		t.Errorf("ThreadNSpids inside = %v, %v", threads, err)
	}
}

// findChild polls for a child of parent whose comm is comm, calling failed
// if the parent exits first.
func findChild(t *testing.T, parent int, comm string, exited <-chan struct{}, failed func()) int {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		select {
		case <-exited:
			failed()
			return 0
		default:
		}
		pids, err := PIDs()
		if err != nil {
			t.Fatal(err)
		}
		for _, pid := range pids {
			st, err := ReadStat(pid)
			if err == nil && st.PPID == parent && st.Comm == comm {
				return pid
			}
		}
	}
	t.Fatalf("no child %q of pid %d within 5s", comm, parent)
	return 0
}
