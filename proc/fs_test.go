package proc

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// fakeProc builds a proc tree under a temporary directory from a map of
// relative paths to contents; a content starting with "->" makes a symlink.
func fakeProc(t *testing.T, files map[string]string) FS {
	t.Helper()
	root := t.TempDir()
	for name, content := range files {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		var err error
		if target, ok := strings.CutPrefix(content, "->"); ok {
			err = os.Symlink(target, p)
		} else {
			err = os.WriteFile(p, []byte(content), 0o644)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return FS{Root: root}
}

func TestFSPaths(t *testing.T) {
	if got := (FS{}).pidPath(Self, "maps"); got != "/proc/self/maps" {
		t.Errorf("zero FS self maps = %q", got)
	}
	if got := DefaultFS.taskPath(12, 13, "status"); got != "/proc/12/task/13/status" {
		t.Errorf("task path = %q", got)
	}
	if got := (FS{Root: "/x/proc"}).path("stat"); got != "/x/proc/stat" {
		t.Errorf("stat path = %q", got)
	}
}

func TestFakeProcTree(t *testing.T) {
	fs := fakeProc(t, map[string]string{
		"1/status":               "Name:\tinit\nPid:\t1\n",
		"42/maps":                "1000-2000 r-xp 00000000 fe:00 7 /bin/x\nbad\n",
		"42/status":              "Name:\tx\nTgid:\t42\nPid:\t42\nNSpid:\t42\t1\n",
		"42/task/42/status":      "Name:\tx\nTgid:\t42\nPid:\t42\nNSpid:\t42\t1\n",
		"42/task/43/status":      "Name:\tx\nTgid:\t42\nPid:\t43\nNSpid:\t43\t2\n",
		"42/task/44/README":      "task 44 exited: its status is gone",
		"42/task/45/status":      "Name:\tx\nTgid:\t42\nPid:\t45\n",
		"42/ns/mnt":              "->mnt:[4026532001]",
		"42/ns/pid_for_children": "->pid:[4026532002]",
		"42/ns/net":              "->mnt:[4026532003]",
		"42/ns/uts":              "->uts:4026532004",
		"42/net/dev":             "lo: 1 2 0 0 0 0 0 0 3 4 0 0 0 0 0 0\n",
		"100/cmdline":            "",
		"self":                   "->42",
		"stat":                   "cpu 1 2 3 4\n",
		"sys/README":             "not a pid",
		"0123abc/status":         "not a pid either",
		"7":                      "a file, not a process directory",
	})

	pids, err := fs.PIDs()
	if err != nil || !reflect.DeepEqual(pids, []int{1, 42, 100}) {
		t.Errorf("PIDs = %v, %v", pids, err)
	}
	tids, err := fs.Tasks(42)
	if err != nil || !reflect.DeepEqual(tids, []int{42, 43, 44, 45}) {
		t.Errorf("Tasks = %v, %v", tids, err)
	}
	threads, err := fs.ThreadNSpids(42)
	want := []ThreadNSpid{{42, 1}, {43, 2}, {45, 45}}
	if err != nil || !reflect.DeepEqual(threads, want) {
		t.Errorf("ThreadNSpids = %v, %v; want %v", threads, err, want)
	}
	if _, err := fs.ThreadNSpids(99); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("ThreadNSpids of missing pid: %v", err)
	}

	st, err := fs.ReadStatus(Self)
	if err != nil || st.Pid != 42 || st.InnermostPid() != 1 {
		t.Errorf("ReadStatus(Self) = %+v, %v", st, err)
	}

	// A syntax error names the file's path and line.
	_, err = fs.ReadMaps(42)
	se, ok := errors.AsType[*SyntaxError](err)
	if !ok || se.File != filepath.Join(fs.Root, "42/maps") || se.Line != 2 ||
		!strings.HasPrefix(err.Error(), fs.Root+"/42/maps:2: bad address range") {
		t.Errorf("ReadMaps error = %v", err)
	}
	if _, err := fs.ReadMaps(1); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("ReadMaps of missing file: %v", err)
	}

	if ns, err := fs.NamespaceID(42, "mnt"); err != nil || ns != 4026532001 {
		t.Errorf("NamespaceID mnt = %d, %v", ns, err)
	}
	if ns, err := fs.NamespaceID(42, "pid_for_children"); err != nil || ns != 4026532002 {
		t.Errorf("NamespaceID pid_for_children = %d, %v", ns, err)
	}
	if _, err := fs.NamespaceID(42, "net"); err == nil || !strings.Contains(err.Error(), `namespace type is "mnt", want "net"`) {
		t.Errorf("NamespaceID with mismatched type: %v", err)
	}
	if _, err := fs.NamespaceID(42, "uts"); err == nil || !strings.Contains(err.Error(), "42/ns/uts: want type:[inode]") {
		t.Errorf("NamespaceID with malformed link: %v", err)
	}
	for _, ns := range []string{"", "..", "../../etc", "a\x00"} {
		if _, err := fs.NamespaceID(42, ns); err == nil || !strings.Contains(err.Error(), "invalid namespace type") {
			t.Errorf("NamespaceID(%q): %v", ns, err)
		}
	}

	if nd, err := fs.ReadNetDev(42); err != nil || len(nd) != 1 || nd[0].TxPackets != 4 {
		t.Errorf("ReadNetDev = %+v, %v", nd, err)
	}
	if args, err := fs.ReadCmdline(100); err != nil || args != nil {
		t.Errorf("ReadCmdline of kernel thread = %q, %v", args, err)
	}
	if ss, err := fs.ReadSystemStat(); err != nil || ss.Total.Idle != 4 {
		t.Errorf("ReadSystemStat = %+v, %v", ss, err)
	}
}
