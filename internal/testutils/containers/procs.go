package containers

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"nsprof/internal/testutils"
	"nsprof/proc"
)

// startTimeout bounds how long a container may take to show its target.
const startTimeout = 30 * time.Second

// targetSeconds is how long the fixture runs unless killed.
const targetSeconds = "600"

// StartPivot starts the fixture at [BinPath] as pid 1 of new mount and pid
// namespaces whose root is a fresh [Rootfs] (unshare --mount --pid --fork,
// then pivot_root), and returns its host pid. The decoy is installed.
func StartPivot(t testing.TB) int {
	t.Helper()
	unshare := testutils.LookPathOrSkip(t, "unshare")
	r := BuildRootfs(t)
	InstallDecoy(t)
	cmd := exec.Command(unshare, "--kill-child", "--mount", "--pid", "--fork", r.Pivot, r.Dir, BinPath, targetSeconds)
	return startTree(t, cmd, BinPath)
}

// StartPivotIn runs exe (a path inside root) with args in a new mount
// and PID namespace whose root is the directory root, as [StartPivot]
// runs the fixture, and returns the target's host pid. root needs a
// /proc mount point; exe must be a static program, or root must hold
// what it loads.
func StartPivotIn(t testing.TB, root, exe string, args ...string) int {
	t.Helper()
	unshare := testutils.LookPathOrSkip(t, "unshare")
	b := Build(t)
	cmd := exec.Command(unshare, append([]string{"--kill-child", "--mount", "--pid", "--fork", b.Pivot, root, exe}, args...)...)
	return startTree(t, cmd, exe)
}

// FlatpakDirs are the host directories of [StartBwrapFlatpak]'s sandbox.
type FlatpakDirs struct {
	App, Runtime, Info string // mounted at /app, /usr and /.flatpak-info
}

// StartBwrapFlatpak starts the fixture at [FlatpakBinPath] in a bubblewrap
// sandbox laid out like Flatpak: a tmpfs root, a runtime bind-mounted
// read-only at /usr, the app at /app, and a /.flatpak-info naming
// [FlatpakAppID] with the host app-path and runtime-path. It returns the
// target's host pid (pid 2 in the sandbox) and the host directories.
func StartBwrapFlatpak(t testing.TB) (int, FlatpakDirs) {
	t.Helper()
	b := Build(t)
	dir := t.TempDir()
	d := FlatpakDirs{App: filepath.Join(dir, "app"), Runtime: filepath.Join(dir, "runtime"), Info: filepath.Join(dir, "flatpak-info")}
	return startBwrapFlatpak(t, d, b.Hot), d
}

// FlatpakInstallation lays out a sandbox as a Flatpak installation does
// under base: the app deployed at
// base/app/[FlatpakAppID]/x86_64/master/c0ffee/files and the runtime at
// base/runtime/org.nsprof.Platform/x86_64/1/feed/files.
func FlatpakInstallation(base string) FlatpakDirs {
	return FlatpakDirs{
		App:     filepath.Join(base, "app", FlatpakAppID, "x86_64", "master", "c0ffee", "files"),
		Runtime: filepath.Join(base, "runtime", "org.nsprof.Platform", "x86_64", "1", "feed", "files"),
		Info:    filepath.Join(base, "flatpak-info"),
	}
}

// StartBwrapFlatpakInstalled is [StartBwrapFlatpak] with the app and
// runtime deployed in the [FlatpakInstallation] layout under base, and bin
// (a dynamically linked fixture) as the app's /app/bin/hot.
func StartBwrapFlatpakInstalled(t testing.TB, base, bin string) (int, FlatpakDirs) {
	t.Helper()
	requireRoot(t)
	d := FlatpakInstallation(base)
	return startBwrapFlatpak(t, d, bin), d
}

func startBwrapFlatpak(t testing.TB, d FlatpakDirs, bin string) int {
	t.Helper()
	bwrap := testutils.LookPathOrSkip(t, "bwrap")
	InstallDecoy(t)
	mkdir(t, filepath.Join(d.App, "bin"))
	copyFile(t, bin, filepath.Join(d.App, "bin", "hot"), 0o755)
	makeLinks(t, d.App)
	copyLibs(t, bin, d.Runtime, "lib/x86_64-linux-gnu")
	mkdir(t, filepath.Join(d.Runtime, "lib64"))
	if err := os.Symlink("../lib/x86_64-linux-gnu/ld-linux-x86-64.so.2", filepath.Join(d.Runtime, "lib64", "ld-linux-x86-64.so.2")); err != nil {
		t.Fatal(err)
	}
	writeFile(t, d.Info, fmt.Sprintf("[Application]\nname=%s\nruntime=runtime/org.nsprof.Platform/x86_64/1\n\n"+
		"[Instance]\ninstance-id=4242\napp-path=%s\nruntime-path=%s\nflatpak-version=1.14.10\n", FlatpakAppID, d.App, d.Runtime))
	// No --die-with-parent: the sandbox must outlive nothing but the test,
	// and cleanup kills it.
	cmd := exec.Command(bwrap, "--ro-bind", d.Runtime, "/usr", "--ro-bind", d.App, "/app",
		"--symlink", "usr/lib", "/lib", "--symlink", "usr/lib64", "/lib64",
		"--ro-bind", d.Info, "/.flatpak-info", "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp",
		"--unshare-all", "--new-session", FlatpakBinPath, targetSeconds)
	return startTree(t, cmd, FlatpakBinPath)
}

// startTree starts cmd in its own session, waits for a descendant whose exe
// is exe, and registers a cleanup that SIGKILLs the descendant and cmd.
// (The target is pid 1 of its namespace and ignores SIGTERM.)
func startTree(t testing.TB, cmd *exec.Cmd, exe string) int {
	t.Helper()
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", cmd.Path, err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	var target int
	t.Cleanup(func() {
		if target > 0 {
			syscall.Kill(target, syscall.SIGKILL)
		}
		cmd.Process.Kill()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Errorf("%s (pid %d) did not exit after SIGKILL", cmd.Path, cmd.Process.Pid)
		}
	})
	deadline := time.Now().Add(startTimeout)
	for {
		// execve points /proc/PID/exe at the new binary before the
		// ELF loader maps it: wait for the mapping too.
		if pid := findDescendant(cmd.Process.Pid, exe); pid > 0 && mapsFile(pid, exe) {
			target = pid
			return pid
		}
		select {
		case <-done:
			t.Fatalf("%s exited before starting %s: %s", strings.Join(cmd.Args, " "), exe, out.String())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: no process running %s after %v: %s", strings.Join(cmd.Args, " "), exe, startTimeout, out.String())
		}
	}
}

// mapsFile reports whether /proc/PID/maps lists a mapping of path.
func mapsFile(pid int, path string) bool {
	maps, err := proc.ReadMaps(pid)
	if err != nil {
		return false
	}
	for _, m := range maps {
		if m.Path == path {
			return true
		}
	}
	return false
}

// findDescendant returns a descendant of root whose /proc/PID/exe reads exe.
func findDescendant(root int, exe string) int {
	parents := map[int]int{}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if pp, ok := ppidOf(pid); ok {
			parents[pid] = pp
		}
	}
	for pid := range parents {
		if l, _ := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid)); l != exe {
			continue
		}
		for p, n := parents[pid], 0; p > 0 && n < 16; p, n = parents[p], n+1 {
			if p == root {
				return pid
			}
		}
	}
	return 0
}

func ppidOf(pid int) (int, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, false
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 2 {
		return 0, false
	}
	pp, err := strconv.Atoi(f[1])
	return pp, err == nil
}

// WaitExit waits until pid is gone (reaped), failing the test after d.
func WaitExit(t testing.TB, pid int, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); os.IsNotExist(err) {
			return
		}
		if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil {
			if i := bytes.LastIndexByte(b, ')'); i > 0 && i+2 < len(b) && b[i+2] == 'Z' {
				// A zombie whose parent has not reaped it yet: its mappings
				// and namespaces are already gone.
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("pid %d still alive after %v", pid, d)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
