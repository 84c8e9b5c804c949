package proc

import (
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Tests in this file read the real /proc of the test process.

func inodeOf(t *testing.T, path string) (Dev, uint64) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	st := fi.Sys().(*syscall.Stat_t)
	// The glibc encoding of dev_t.
	maj := uint32((st.Dev>>8)&0xfff | (st.Dev>>32)&^0xfff)
	min := uint32(st.Dev&0xff | (st.Dev>>12)&^0xff)
	return Dev{Major: maj, Minor: min}, st.Ino
}

func TestReadLinkFake(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "app bin")
	if err := os.WriteFile(bin, []byte("x"), 0o755); err != nil {
		t.Fatal(err)
	}
	fs := fakeProc(t, map[string]string{"5/exe": "->" + bin, "6/exe": "->" + bin + " (deleted)"})

	l, err := fs.ReadLink(5, "exe")
	if err != nil {
		t.Fatal(err)
	}
	dev, ino := inodeOf(t, bin)
	if want := (Link{Target: bin, Dev: dev, Inode: ino}); l != want {
		t.Errorf("ReadLink = %+v, want %+v", l, want)
	}
	// A fake tree cannot reproduce the kernel's magic link, which still
	// stats a deleted file; the dangling symlink fails instead.
	if _, err := fs.ReadLink(6, "exe"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("ReadLink of dangling link: %v", err)
	}
	if _, err := fs.ReadLink(5, "../5/exe"); err == nil {
		t.Error("ReadLink accepted an unsupported link name")
	}
}

func TestLiveSelf(t *testing.T) {
	pid := os.Getpid()

	exe, err := ExeLink(Self)
	if err != nil {
		t.Fatal(err)
	}
	maps, err := ReadMaps(Self)
	if err != nil {
		t.Fatal(err)
	}
	var exeText, vdso bool
	for _, m := range maps {
		if m.Path == exe.Target && m.Dev == exe.Dev && m.Inode == exe.Inode && m.Perms&PermExec != 0 {
			exeText = true
		}
		vdso = vdso || m.Path == "[vdso]"
	}
	if !exeText || !vdso {
		t.Errorf("maps lack executable text of %+v (%v) or [vdso] (%v)", exe, exeText, vdso)
	}

	st, err := ReadStatus(Self)
	if err != nil {
		t.Fatal(err)
	}
	if st.Pid != pid || st.Tgid != pid || st.PPid != os.Getppid() || st.Threads < 1 ||
		st.Uid.Effective != uint32(os.Geteuid()) || st.Gid.Real != uint32(os.Getgid()) {
		t.Errorf("status = %+v", st)
	}
	if len(st.NSpid) == 0 || st.NSpid[0] != pid {
		t.Errorf("NSpid = %v, want a chain starting with %d", st.NSpid, pid)
	}
	stat, err := ReadStat(Self)
	if err != nil {
		t.Fatal(err)
	}
	if stat.PID != pid || stat.Comm != st.Name || stat.PPID != st.PPid || stat.NumThreads < 1 || stat.StartTime == 0 {
		t.Errorf("stat = %+v", stat)
	}

	mounts, err := ReadMountInfo(Self)
	if err != nil {
		t.Fatal(err)
	}
	entries, err := ReadMounts(Self)
	if err != nil {
		t.Fatal(err)
	}
	if len(mounts) != len(entries) {
		t.Errorf("mountinfo has %d mounts, mounts %d", len(mounts), len(entries))
	}
	if !slices.ContainsFunc(mounts, func(m Mount) bool { return m.MountPoint == "/proc" && m.FSType == "proc" }) {
		t.Error("mountinfo lacks /proc")
	}

	args, err := ReadCmdline(Self)
	if err != nil || !reflect.DeepEqual(args, os.Args) {
		t.Errorf("cmdline = %q, %v; want %q", args, err, os.Args)
	}
	if cgs, err := ReadCgroup(Self); err != nil || len(cgs) == 0 {
		t.Errorf("cgroup = %v, %v", cgs, err)
	}
	if nd, err := ReadNetDev(Self); err != nil || !slices.ContainsFunc(nd, func(s NetDevStat) bool { return s.Name == "lo" }) {
		t.Errorf("net/dev = %v, %v", nd, err)
	}

	tids, err := Tasks(Self)
	if err != nil || !slices.Contains(tids, pid) {
		t.Errorf("Tasks = %v, %v", tids, err)
	}
	threads, err := ThreadNSpids(Self)
	if err != nil || len(threads) == 0 {
		t.Errorf("ThreadNSpids = %v, %v", threads, err)
	}
	pids, err := PIDs()
	if err != nil || !slices.Contains(pids, pid) || !slices.IsSorted(pids) {
		t.Errorf("PIDs has %d entries, %v", len(pids), err)
	}

	for _, ns := range []string{"mnt", "pid", "user", "net", "ipc", "uts", "cgroup"} {
		id, err := NamespaceID(Self, ns)
		if err != nil || id == 0 {
			t.Errorf("NamespaceID(%s) = %d, %v", ns, id, err)
		}
		byPid, err := NamespaceID(pid, ns)
		if err != nil || byPid != id {
			t.Errorf("NamespaceID(%d, %s) = %d, %v; want %d", pid, ns, byPid, err, id)
		}
	}
	root, err := RootLink(Self)
	if dev, ino := inodeOf(t, "/"); err != nil || root.Target != "/" || root.Dev != dev || root.Inode != ino {
		t.Errorf("RootLink = %+v, %v", root, err)
	}
}

func TestLiveSystem(t *testing.T) {
	ss, err := ReadSystemStat()
	if err != nil {
		t.Fatal(err)
	}
	if len(ss.CPUs) == 0 || ss.BootTime == 0 || ss.Processes == 0 || ss.Total.Idle == 0 {
		t.Errorf("system stat = %+v", ss)
	}
	mi, err := ReadMeminfo()
	if err != nil || mi["MemTotal"] == 0 || mi["MemTotal"]%1024 != 0 {
		t.Errorf("meminfo MemTotal = %d, %v", mi["MemTotal"], err)
	}
	if _, err := ReadDiskstats(); err != nil {
		t.Error(err)
	}
}

// TestLiveDeletedExecutable runs a copy of sleep, deletes it, and checks that
// maps and the exe link report it as deleted with the original identity.
func TestLiveDeletedExecutable(t *testing.T) {
	src, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep binary")
	}
	bin := filepath.Join(t.TempDir(), "my sleep")
	copyFile(t, src, bin)
	dev, ino := inodeOf(t, bin)

	cmd := exec.Command(bin, "10")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	pid := cmd.Process.Pid
	// The new comm comes before the binary is mapped: exec sets it, then
	// maps the program (a race-detector run once read the maps between).
	waitFor(t, func() bool {
		st, err := ReadStat(pid)
		if err != nil || st.Comm != "my sleep" {
			return false
		}
		maps, err := ReadMaps(pid)
		return err == nil && slices.ContainsFunc(maps, func(m Mapping) bool { return m.Path == bin })
	})
	if err := os.Remove(bin); err != nil {
		t.Fatal(err)
	}

	exe, err := ExeLink(pid)
	if want := (Link{Target: bin, Deleted: true, Dev: dev, Inode: ino}); err != nil || exe != want {
		t.Errorf("ExeLink = %+v, %v; want %+v", exe, err, want)
	}
	maps, err := ReadMaps(pid)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(maps, func(m Mapping) bool {
		return m.Path == bin && m.Deleted && m.Dev == dev && m.Inode == ino
	}) {
		t.Errorf("maps lack deleted %q: %+v", bin, maps)
	}
}

func copyFile(t *testing.T, src, dst string) {
	t.Helper()
	in, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}

// waitFor polls cond for up to five seconds.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatal("condition not met within 5s")
}

func TestLiveMissingProcess(t *testing.T) {
	// PIDs are at most 2^22; this one never exists.
	const gone = 1 << 30
	for name, err := range map[string]error{
		"maps":   second(ReadMaps(gone)),
		"status": second(ReadStatus(gone)),
		"ns":     second(NamespaceID(gone, "mnt")),
		"exe":    second(ExeLink(gone)),
		"tasks":  second(ThreadNSpids(gone)),
	} {
		if !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), "/proc/1073741824/") {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func second[T any](_ T, err error) error { return err }

// TestChildren lists the two children the test process starts, and no
// grandchild.
func TestChildren(t *testing.T) {
	var want []int
	for range 2 {
		cmd := exec.Command("sh", "-c", "sleep 30 & wait")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		want = append(want, cmd.Process.Pid)
	}
	slices.Sort(want)
	var got []int
	for range 50 {
		var err error
		if got, err = DefaultFS.Children(os.Getpid()); err != nil {
			t.Fatal(err)
		}
		if grand, _ := DefaultFS.Children(want[1]); len(grand) == 1 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Children(%d) = %v, want %v", os.Getpid(), got, want)
	}
}

// TestReadSmapsSelf reads the test process's own smaps: its executable
// is mapped, and resident.
func TestReadSmapsSelf(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dev, ino := inodeOf(t, exe)
	maps, err := ReadSmaps(Self)
	if err != nil {
		t.Fatal(err)
	}
	var rss uint64
	for _, m := range maps {
		if m.Dev == dev && m.Inode == ino {
			rss += m.Rss
		}
	}
	if rss == 0 {
		t.Fatalf("no resident mapping of %s (%v, inode %d) in %d mappings", exe, dev, ino, len(maps))
	}
}
