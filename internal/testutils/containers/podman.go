package containers

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"nsprof/internal/testutils"
)

// RootlessUser is the user StartPodmanRootless runs podman as. It is
// created (with subordinate uid and gid ranges) when missing and deleted
// again at cleanup if the harness created it.
const RootlessUser = "nsprofctr"

// PodmanImage is the image imported from the [Rootfs] tarball.
const PodmanImage = "localhost/nsprof-hot:latest"

// podmanEnv is how to run podman for one storage.
type podmanEnv struct {
	user     string // "" for root
	home     string
	runtime  string // XDG_RUNTIME_DIR for rootless
	flags    []string
	env      []string
	root     string // graphroot
	removeMu sync.Mutex
	removed  map[string]bool
}

var podmans struct {
	mu   sync.Mutex
	byID map[string]*podmanEnv
}

func (e *podmanEnv) cmd(ctx context.Context, args ...string) *exec.Cmd {
	full := append(append([]string{}, e.flags...), args...)
	if e.user == "" {
		c := exec.CommandContext(ctx, "podman", full...)
		c.Env = append(os.Environ(), e.env...)
		return c
	}
	a := append([]string{"-u", e.user, "--", "env", "HOME=" + e.home, "XDG_RUNTIME_DIR=" + e.runtime,
		"PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin"}, e.env...)
	a = append(append(a, "podman"), full...)
	c := exec.CommandContext(ctx, "runuser", a...)
	c.Dir = "/"
	return c
}

func (e *podmanEnv) run(args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	c := e.cmd(ctx, args...)
	var stderr strings.Builder
	c.Stderr = &stderr
	out, err := c.Output()
	if err != nil {
		return string(out), fmt.Errorf("podman %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return strings.TrimSpace(string(out)), nil
}

func hardNofile() uint64 {
	var r syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &r); err != nil || r.Max > 1<<20 {
		return 1024
	}
	return r.Max
}

func randName(prefix string) string {
	var b [4]byte
	rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}

// storageFlags returns podman's storage flags for "overlay" (kernel
// overlay) or "fuse" (fuse-overlayfs as mount program).
func storageFlags(t testing.TB, storage string) []string {
	t.Helper()
	switch storage {
	case "overlay":
		return []string{"--storage-driver", "overlay"}
	case "fuse":
		testutils.LookPathOrSkip(t, "fuse-overlayfs")
		return []string{"--storage-driver", "overlay", "--storage-opt", "overlay.mount_program=/usr/bin/fuse-overlayfs"}
	}
	t.Fatalf("podman storage %q: want overlay or fuse", storage)
	return nil
}

// commonFlags: runc (crun fails on this host's hybrid cgroups), cgroupfs
// (systemd is not pid 1) and file events (no journald).
var commonFlags = []string{"--cgroup-manager", "cgroupfs", "--events-backend", "file", "--runtime", "runc"}

// StartPodman starts the fixture in a rootful podman container with a
// private --root and --runroot under a temporary directory (the host's
// /var/lib/containers/storage is not touched, except for podman's blob
// info cache), storage "overlay" (kernel overlay) or "fuse"
// (fuse-overlayfs), runtime runc and no network. It returns the target's
// host pid and the full container id. Cleanup removes the container, the
// image and the storage.
func StartPodman(t testing.TB, storage string) (pid int, id string) {
	t.Helper()
	testutils.LookPathOrSkip(t, "podman")
	testutils.LookPathOrSkip(t, "runc")
	r := BuildRootfs(t)
	InstallDecoy(t)
	return startPodman(t, privatePodman(t, storage), r.Tarball)
}

// privatePodman returns the environment and flags of a podman whose
// configuration, storage (of kind storage, see storageFlags) and run
// directory are under a temporary directory; Cleanup wipes the storage.
func privatePodman(t testing.TB, storage string) *podmanEnv {
	t.Helper()
	dir := t.TempDir()
	conf := filepath.Join(dir, "containers.conf")
	writeFile(t, conf, fmt.Sprintf("[engine]\nevents_logfile_path = %q\ntmp_dir = %q\n[network]\nnetwork_config_dir = %q\n",
		filepath.Join(dir, "events.log"), filepath.Join(dir, "tmp"), filepath.Join(dir, "networks")))
	writeFile(t, filepath.Join(dir, "storage.conf"), fmt.Sprintf("[storage]\ndriver = \"overlay\"\nrunroot = %q\ngraphroot = %q\n",
		filepath.Join(dir, "run"), filepath.Join(dir, "root")))
	e := &podmanEnv{
		root: filepath.Join(dir, "root"),
		env:  []string{"CONTAINERS_CONF=" + conf, "CONTAINERS_STORAGE_CONF=" + filepath.Join(dir, "storage.conf")},
	}
	e.flags = append(append([]string{"--root", e.root, "--runroot", filepath.Join(dir, "run")}, storageFlags(t, storage)...), commonFlags...)
	t.Cleanup(func() { e.reset(t) })
	return e
}

func startPodman(t testing.TB, e *podmanEnv, tarball string) (int, string) {
	t.Helper()
	return startPodmanImage(t, e, tarball, PodmanImage, BinPath, targetSeconds)
}

// startPodmanImage imports tarball as image (once per storage) and runs
// bin with args in a container of it, returning the host pid of bin
// once it runs and the container's id.
func startPodmanImage(t testing.TB, e *podmanEnv, tarball, image, bin string, args ...string) (int, string) {
	t.Helper()
	if _, err := e.run("image", "exists", image); err != nil {
		if _, err := e.run("import", "-q", tarball, image); err != nil {
			t.Fatal(err)
		}
	}
	name := randName("nsprof-hot-")
	n := strconv.FormatUint(hardNofile(), 10)
	// podman clamps its own RLIMIT_NPROC to 32768, and without
	// CAP_SYS_RESOURCE the defaults (1048576) cannot be set.
	id, err := e.run(append([]string{"run", "-d", "--name", name, "--network", "none",
		"--ulimit", "nofile=" + n + ":" + n, "--ulimit", "nproc=32768:32768",
		image, bin}, args...)...)
	if err != nil {
		t.Fatal(err)
	}
	podmans.mu.Lock()
	if podmans.byID == nil {
		podmans.byID = map[string]*podmanEnv{}
	}
	podmans.byID[id] = e
	podmans.mu.Unlock()
	t.Cleanup(func() { removeContainer(t, e, id) })
	out, err := e.run("inspect", "-f", "{{.State.Pid}}", id)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(out)
	if err != nil || pid <= 0 {
		t.Fatalf("podman inspect %s: pid %q", id, out)
	}
	// Wait until the container's init has exec'd the fixture.
	deadline := time.Now().Add(startTimeout)
	for {
		if l, _ := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid)); l == bin {
			return pid, id
		}
		if time.Now().After(deadline) {
			t.Fatalf("container %s (pid %d) does not run %s", id, pid, bin)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// RemovePodman stops the container id started by StartPodman or
// StartPodmanRootless and removes it, its image and its storage, so a test
// can check what still works once the container's files are gone.
func RemovePodman(t testing.TB, id string) {
	t.Helper()
	e := started(t, id)
	removeContainer(t, e, id)
	e.reset(t)
}

// started returns how to run podman for the container id, which
// StartPodman or StartPodmanRootless started.
func started(t testing.TB, id string) *podmanEnv {
	t.Helper()
	podmans.mu.Lock()
	e := podmans.byID[id]
	podmans.mu.Unlock()
	if e == nil {
		t.Fatalf("container %s was not started by this package", id)
	}
	return e
}

// ExecPodman runs args in the container id started by StartPodman or
// StartPodmanRootless (podman exec, as the user that started it) and
// waits for it to end.
func ExecPodman(t testing.TB, id string, args ...string) {
	t.Helper()
	if _, err := started(t, id).run(append([]string{"exec", id}, args...)...); err != nil {
		t.Fatal(err)
	}
}

func removeContainer(t testing.TB, e *podmanEnv, id string) {
	t.Helper()
	e.removeMu.Lock()
	defer e.removeMu.Unlock()
	if e.removed[id] {
		return
	}
	if _, err := e.run("rm", "-f", "-t", "0", id); err != nil {
		t.Errorf("remove container: %v", err)
	}
	if e.removed == nil {
		e.removed = map[string]bool{}
	}
	e.removed[id] = true
}

// reset wipes the storage: podman system reset, then unmounts left under
// the graphroot and the directory itself.
func (e *podmanEnv) reset(t testing.TB) {
	t.Helper()
	if _, err := os.Stat(e.root); err != nil {
		return
	}
	if _, err := e.run("system", "reset", "--force"); err != nil {
		t.Logf("podman system reset: %v", err)
	}
	unmountUnder(e.root)
	if err := os.RemoveAll(e.root); err != nil {
		t.Errorf("remove podman storage: %v", err)
	}
}

// unmountUnder lazily unmounts every mount of ours below dir, deepest first.
func unmountUnder(dir string) {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return
	}
	var mps []string
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) > 4 && (f[4] == dir || strings.HasPrefix(f[4], dir+"/")) {
			mps = append(mps, f[4])
		}
	}
	for i := len(mps) - 1; i >= 0; i-- {
		exec.Command("umount", "-l", mps[i]).Run()
	}
}

var fuseDev struct {
	mu    sync.Mutex
	users int
	mode  os.FileMode
}

// openFuseDev makes /dev/fuse usable by the rootless user (chmod 666; it is
// 0600 on hosts without udev) until the test ends, then restores the mode.
func openFuseDev(t testing.TB) {
	t.Helper()
	fuseDev.mu.Lock()
	defer fuseDev.mu.Unlock()
	if fuseDev.users == 0 {
		fi, err := os.Stat("/dev/fuse")
		if err != nil {
			testutils.RequireCI(t, "/dev/fuse: %v", err)
		}
		fuseDev.mode = fi.Mode().Perm()
		if err := os.Chmod("/dev/fuse", 0o666); err != nil {
			t.Fatal(err)
		}
	}
	fuseDev.users++
	t.Cleanup(func() {
		fuseDev.mu.Lock()
		defer fuseDev.mu.Unlock()
		if fuseDev.users--; fuseDev.users == 0 {
			os.Chmod("/dev/fuse", fuseDev.mode)
		}
	})
}

// userLock is held shared by every test using RootlessUser, across the
// test processes go test runs at once (the container, e2e and cmd
// packages): the test that created the user removes it at its end only
// when it can take the lock exclusively, that is when no other process
// uses the user (one did, and lost its home under it).
const userLock = "/run/nsprof-ctr-user.lock"

// ensureUser creates RootlessUser with subordinate id ranges if missing.
func ensureUser(t testing.TB) *user.User {
	t.Helper()
	l, err := os.OpenFile(userLock, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Flock(int(l.Fd()), syscall.LOCK_SH); err != nil {
		l.Close()
		t.Fatal(err)
	}
	if u, err := user.Lookup(RootlessUser); err == nil {
		t.Cleanup(func() { l.Close() })
		ensureSubids(t)
		return u
	}
	home := "/home/" + RootlessUser
	if _, err := command("useradd", "-m", "-d", home, "-s", "/bin/sh", RootlessUser); err != nil {
		l.Close()
		testutils.RequireCI(t, "useradd %s: %v", RootlessUser, err)
	}
	t.Cleanup(func() {
		defer l.Close()
		// Another process using the user holds the lock shared: then
		// the user stays (the next run finds it).
		if err := syscall.Flock(int(l.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
			t.Logf("%s stays: another test process uses it", RootlessUser)
			return
		}
		killUser(RootlessUser)
		if _, err := command("userdel", "-r", "-f", RootlessUser); err != nil {
			t.Logf("userdel: %v", err)
		}
		os.RemoveAll(home)
	})
	ensureSubids(t)
	u, err := user.Lookup(RootlessUser)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func ensureSubids(t testing.TB) {
	t.Helper()
	for _, f := range []string{"/etc/subuid", "/etc/subgid"} {
		b, _ := os.ReadFile(f)
		if strings.Contains("\n"+string(b), "\n"+RootlessUser+":") {
			continue
		}
		if _, err := command("usermod", "--add-subuids", "300000-365535", "--add-subgids", "300000-365535", RootlessUser); err != nil {
			t.Fatalf("usermod: %v", err)
		}
		return
	}
}

// killUser SIGKILLs the processes left running as user (podman's rootless
// pause process, conmon), found by pid.
func killUser(name string) {
	u, err := user.Lookup(name)
	if err != nil {
		return
	}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		var st syscall.Stat_t
		if syscall.Stat("/proc/"+e.Name(), &st) == nil && strconv.Itoa(int(st.Uid)) == u.Uid {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// StartPodmanRootless starts the fixture in a rootless podman container run
// by [RootlessUser] (created with subuid and subgid ranges if missing) with
// a private XDG_RUNTIME_DIR and its own storage under the user's home:
// ~/.local/share/containers/storage-nsprof-xdg-* for "overlay" (native
// rootless overlay), storage-fuse-nsprof-xdg-* for "fuse"
// (fuse-overlayfs; /dev/fuse is made 0666 until cleanup). It returns the
// target's host pid and the container id. Cleanup removes the container,
// the storage, the runtime directory and the pause process.
func StartPodmanRootless(t testing.TB, storage string) (pid int, id string) {
	t.Helper()
	testutils.LookPathOrSkip(t, "podman")
	testutils.LookPathOrSkip(t, "newuidmap")
	testutils.LookPathOrSkip(t, "runuser")
	r := BuildRootfs(t)
	InstallDecoy(t)
	e, tarball := rootlessEnv(t, storage, r.Tarball)
	return startPodman(t, e, tarball)
}

// StartPodmanRootlessProgram starts the program at host path bin with
// args in a rootless podman container as [StartPodmanRootless] starts
// the fixture: in a root file system holding bin at [ProgramPath] and the
// libraries it links (copies of the host's, at the same paths). It
// returns the program's host pid and the container id.
func StartPodmanRootlessProgram(t testing.TB, storage, bin string, args ...string) (pid int, id string) {
	t.Helper()
	testutils.LookPathOrSkip(t, "podman")
	testutils.LookPathOrSkip(t, "newuidmap")
	testutils.LookPathOrSkip(t, "runuser")
	requireRoot(t)
	tarball := programRootfs(t, bin)
	e, tarball := rootlessEnv(t, storage, tarball)
	image := "localhost/nsprof-" + strings.ToLower(filepath.Base(ProgramPath(bin))) + ":latest"
	return startPodmanImage(t, e, tarball, image, ProgramPath(bin), args...)
}

// rootlessEnv makes the storage, runtime directory and user of a
// rootless podman, with a copy of tarball the user can read, and
// registers their cleanup.
func rootlessEnv(t testing.TB, storage, rootfsTar string) (*podmanEnv, string) {
	t.Helper()
	u := ensureUser(t)
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	if storage == "fuse" {
		openFuseDev(t)
	}
	rt, err := os.MkdirTemp("", "nsprof-xdg-")
	if err != nil {
		t.Fatal(err)
	}
	os.Chown(rt, uid, gid)
	os.Chmod(rt, 0o700)
	tarball := filepath.Join(rt, "rootfs.tar")
	copyFile(t, rootfsTar, tarball, 0o644)
	os.Chown(tarball, uid, gid)
	sub := "storage"
	if storage == "fuse" {
		sub = "storage-fuse"
	}
	// One storage per call: go test runs packages in parallel, and two
	// tests sharing a graphroot with different runroots fail with
	// "database configuration mismatch". nsprof finds the storage
	// through conmon's --root.
	e := &podmanEnv{user: RootlessUser, home: u.HomeDir, runtime: rt,
		root: filepath.Join(u.HomeDir, ".local/share/containers", sub+"-"+filepath.Base(rt))}
	e.flags = append(append([]string{"--root", e.root, "--runroot", filepath.Join(rt, "containers")}, storageFlags(t, storage)...), commonFlags...)
	t.Cleanup(func() {
		e.reset(t)
		// The pause process holds the rootless user and mount namespaces.
		if b, err := os.ReadFile(filepath.Join(rt, "libpod", "tmp", "pause.pid")); err == nil {
			if p, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && p > 1 {
				syscall.Kill(p, syscall.SIGKILL)
			}
		}
		unmountUnder(rt)
		os.RemoveAll(rt)
	})
	return e, tarball
}
