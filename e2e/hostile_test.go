package e2e

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"nsprof/internal/testutils"
)

// hostileUser is the unprivileged user the hostile-input tests run their
// target processes as.
const hostileUser = "nsprof-hostile"

// ensureHostileUser creates hostileUser if it is missing and returns its
// uid and gid.
func ensureHostileUser(t *testing.T) (uid, gid int) {
	t.Helper()
	testutils.RequireRoot(t, "needs root to run a target as another user")
	u, err := user.Lookup(hostileUser)
	if err != nil {
		if out, err := exec.Command("useradd", "--system", "--no-create-home", "--shell", "/bin/sh", hostileUser).CombinedOutput(); err != nil {
			testutils.RequireCI(t, "useradd %s: %v: %s", hostileUser, err, out)
		}
		if u, err = user.Lookup(hostileUser); err != nil {
			t.Fatal(err)
		}
	}
	uid, _ = strconv.Atoi(u.Uid)
	gid, _ = strconv.Atoi(u.Gid)
	return uid, gid
}

// secretSetup is a directory the hostile user can use and, in it, a file
// only root may read, holding a token that must never leave it.
type secretSetup struct {
	dir    string // mode 0777, outside /tmp (the attacks hide /tmp)
	secret string // mode 0600, root's
	token  string
}

func newSecret(t *testing.T) secretSetup {
	t.Helper()
	dir, err := os.MkdirTemp("/var/tmp", "nsprof-hostile-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	var b [8]byte
	rand.Read(b[:])
	token := "NSPROF_SECRET_" + hex.EncodeToString(b[:])
	secret := filepath.Join(dir, "root-only")
	// A valid perf map line too, for testdata/jitloop.c's code: read as
	// a JIT map, the token would name every sample of it.
	if err := os.WriteFile(secret, []byte("200000000000 1000 "+token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return secretSetup{dir: dir, secret: secret, token: token}
}

// watchOpens watches path for opens with fanotify and returns a
// function that stops watching and lists the pids that opened it. A
// denied open is no open: the kernel checks permission first. Other
// profilers running on the machine may open the file too; the tests look
// only at nsprof's own pid.
func watchOpens(t *testing.T, path string) func() map[int32]bool {
	t.Helper()
	const (
		fanClassNotif = 0x0
		fanCloexec    = 0x1
		fanNonblock   = 0x2
		fanMarkAdd    = 0x1
		fanOpen       = 0x20
	)
	fd, _, errno := syscall.Syscall(syscall.SYS_FANOTIFY_INIT, fanClassNotif|fanCloexec|fanNonblock, syscall.O_RDONLY|syscall.O_LARGEFILE, 0)
	if errno != 0 {
		testutils.RequireCI(t, "fanotify_init: %v", errno)
	}
	p, err := syscall.BytePtrFromString(path)
	if err != nil {
		t.Fatal(err)
	}
	atFDCWD := -100
	if _, _, errno := syscall.Syscall6(syscall.SYS_FANOTIFY_MARK, fd, fanMarkAdd, fanOpen, uintptr(atFDCWD), uintptr(unsafe.Pointer(p)), 0); errno != 0 {
		syscall.Close(int(fd))
		t.Fatalf("fanotify_mark %s: %v", path, errno)
	}
	return func() map[int32]bool {
		defer syscall.Close(int(fd))
		pids := make(map[int32]bool)
		var buf [4096]byte
		for {
			n, err := syscall.Read(int(fd), buf[:])
			if err != nil || n <= 0 {
				return pids
			}
			// struct fanotify_event_metadata: event_len u32, vers u8,
			// reserved u8, metadata_len u16, mask u64, fd s32, pid s32.
			for off := 0; off+24 <= n; {
				evLen := int(binary.LittleEndian.Uint32(buf[off:]))
				if evLen < 24 {
					break
				}
				if efd := int32(binary.LittleEndian.Uint32(buf[off+16:])); efd >= 0 {
					syscall.Close(int(efd))
				}
				pids[int32(binary.LittleEndian.Uint32(buf[off+20:]))] = true
				off += evLen
			}
		}
	}
}

// recordWatched records pid for secs seconds, as recordPID does, and
// fails if the recorder opened the file watch watches.
func recordWatched(t *testing.T, pid, secs int, watch func() map[int32]bool) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "capture.syscap")
	cmd := exec.Command(nsprofBin, "record", "-p", strconv.Itoa(pid), "--duration", strconv.Itoa(secs), "-o", out,
		"--no-cpu", "--no-memory", "--no-disk", "--no-network")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("nsprof record: %v\n%s", err, stderr.String())
	}
	if watch()[int32(cmd.Process.Pid)] {
		t.Errorf("nsprof record opened the root-only file")
	}
	return out
}

// startAsUser starts script with bash as uid:gid in a new process group
// and kills the group at cleanup.
func startAsUser(t *testing.T, uid, gid int, script string, args ...string) {
	t.Helper()
	setpriv := testutils.LookPathOrSkip(t, "setpriv")
	cmd := exec.Command(setpriv, append([]string{"--reuid=" + strconv.Itoa(uid), "--regid=" + strconv.Itoa(gid),
		"--clear-groups", "--", "bash", "-c", script, "hostile"}, args...)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		cmd.Wait()
		if t.Failed() {
			t.Logf("hostile script output:\n%s", out.String())
		}
	})
}

// waitPID waits for the hostile script to write the target's pid to file.
func waitPID(t *testing.T, file string) int {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if b, err := os.ReadFile(file); err == nil && strings.HasSuffix(string(b), "\n") {
			pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
			if err == nil {
				time.Sleep(200 * time.Millisecond) // let it reach its loop
				return pid
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	testutils.RequireCI(t, "the hostile script did not start its target (unprivileged user namespaces?)")
	return 0
}

// checkNoSecret fails if the token is anywhere nsprof put it: the capture's
// bytes, any file embedded in it (decompressed), or the report.
func checkNoSecret(t *testing.T, capture string, s secretSetup) {
	t.Helper()
	raw, err := os.ReadFile(capture)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(raw), s.token) {
		t.Errorf("the capture holds the root-only file's token")
	}
	files := nsprof(t, "dump", capture, "--files")
	for _, line := range strings.Split(files, "\n") {
		for _, f := range strings.Fields(line) {
			if !strings.HasPrefix(f, "/") {
				continue
			}
			out, err := exec.Command(nsprofBin, "dump", capture, "-x", strings.TrimSuffix(f, ".gz")).Output()
			if err == nil && strings.Contains(string(out), s.token) {
				t.Errorf("embedded file %s holds the root-only file's token", f)
			}
		}
	}
	for _, args := range [][]string{{"report", capture, "--limit", "0"}, {"report", capture, "--json", "--limit", "0"}, {"report", capture, "--summary"}} {
		if out := nsprof(t, args...); strings.Contains(out, s.token) {
			t.Errorf("nsprof %s shows the root-only file's token:\n%s", strings.Join(args, " "), out)
		}
	}
}

// TestHostileNamespace runs, as an unprivileged user in a user and mount
// namespace of its own, a JIT-like target under a fake conmon parent
// (argv[0] "conmon" with -c), with /run/.containerenv and the target's
// /tmp/perf-PID.map bind-mounted from (or linked to) a file only root may
// read. A root `nsprof record -p` must neither open that file nor let a
// byte of it reach the capture or the report.
func TestHostileNamespace(t *testing.T) {
	uid, gid := ensureHostileUser(t)
	testutils.LookPathOrSkip(t, "unshare")
	jit := testutils.BuildC(t, testdata("jitloop.c"))
	// The fake conmon's child: the target, its perf map and its
	// .containerenv set up as the variant says.
	const setup = `
set -e
mount -t tmpfs tmpfs /run
mount -t tmpfs tmpfs /tmp
plant() { # plant VARIANT SECRET DEST
	case "$1" in
	link) ln -s "$2" "$3";;
	own) sed "s/NSPROF_SECRET_/NSPROF_PUBLIC_/" "$DIR/public" > "$3";;
	*) touch "$3"; mount --bind "$2" "$3";;
	esac
}
`
	cases := []struct {
		name, variant string
		chroot        bool
	}{
		{"bind", "bind", false},
		{"symlink", "link", false},
		{"chroot", "bind", true},
		// The control: the same files written by the user itself are
		// read, and their contents shown.
		{"own", "own", false},
		{"own-chroot", "own", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := newSecret(t)
			bin := filepath.Join(s.dir, "jitloop")
			copyTo(t, jit, bin)
			var conmon string
			if c.chroot {
				root := filepath.Join(s.dir, "root")
				for _, d := range []string{"run", "tmp"} {
					if err := os.MkdirAll(filepath.Join(root, d), 0o777); err != nil {
						t.Fatal(err)
					}
					if err := os.Chmod(filepath.Join(root, d), 0o777); err != nil {
						t.Fatal(err)
					}
				}
				copyTo(t, jit, filepath.Join(root, "jitloop"))
				for _, lib := range []string{"/lib/x86_64-linux-gnu/libc.so.6", "/lib64/ld-linux-x86-64.so.2"} {
					copyTo(t, lib, filepath.Join(root, lib))
				}
				conmon = setup + `
R="$DIR/root"
plant "$VARIANT" "$SECRET" "$R/run/.containerenv"
chroot "$R" /jitloop & p=$!
plant "$VARIANT" "$SECRET" "$R/tmp/perf-$p.map"
echo $p > "$DIR/pid"; wait`
			} else {
				conmon = setup + `
plant "$VARIANT" "$SECRET" /run/.containerenv
"$DIR/jitloop" & p=$!
plant "$VARIANT" "$SECRET" "/tmp/perf-$p.map"
echo $p > "$DIR/pid"; wait`
			}
			script := `export DIR="$1" SECRET="$2" VARIANT="$3"
exec unshare --user --map-root-user --mount --fork -- bash -c 'exec -a conmon bash -c "$0" -c 0123456789abcdef' "$4"`
			// The control's files, the user's own: a copy it may read.
			public := filepath.Join(s.dir, "public")
			copyTo(t, s.secret, public)
			os.Chmod(public, 0o644)
			opened := watchOpens(t, s.secret)
			startAsUser(t, uid, gid, script, s.dir, s.secret, c.variant, conmon)
			pid := waitPID(t, filepath.Join(s.dir, "pid"))
			capture := recordWatched(t, pid, 2, opened)
			r := reportJSON(t, capture)
			if r.Capture.Samples == 0 {
				t.Errorf("no samples of the target")
			}
			checkNoSecret(t, capture, s)
			if c.variant != "own" {
				return
			}
			public = strings.Replace(s.token, "NSPROF_SECRET_", "NSPROF_PUBLIC_", 1)
			// The function column is as wide as the longest name shown.
			if out := nsprof(t, "report", capture, "--limit", "3"); !regexp.MustCompile(regexp.QuoteMeta(public) + ` +JIT\n`).MatchString(out) {
				t.Errorf("the user's own perf map was not read:\n%s\n%s", out, nsprof(t, "dump", capture, "--type", "MAP,PROCESS"))
			}
			want := "/proc/" + strconv.Itoa(pid) + "/root/run/.containerenv"
			if out := nsprof(t, "dump", capture, "-x", want); !strings.Contains(out, public) {
				t.Errorf("the user's own %s was not kept: %q", want, out)
			}
		})
	}
}

// TestHostileDebugLink runs, as an unprivileged user, a stripped program
// whose .gnu_debuglink names a file beside it that the user made a
// symbolic link to a file only root may read. The recorder searches for
// that debug file with the user's rights: it must not open the root-only
// file (it would reject it by CRC afterwards, but the open itself reads
// with root's rights what the user could not).
func TestHostileDebugLink(t *testing.T) {
	uid, gid := ensureHostileUser(t)
	s := newSecret(t)
	bin := cFixture(t, false)
	_, debug := stripInto(t, bin, s.dir)
	hot := filepath.Join(s.dir, "bin", "hot")
	tool(t, "objcopy", "--add-gnu-debuglink="+debug, hot)
	if err := os.Chmod(filepath.Join(s.dir, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(s.secret, filepath.Join(s.dir, "bin", "hot.debug")); err != nil {
		t.Fatal(err)
	}
	opened := watchOpens(t, s.secret)
	startAsUser(t, uid, gid, `"$1" 30 & echo $! > "$2"; wait`, hot, filepath.Join(s.dir, "pid"))
	pid := waitPID(t, filepath.Join(s.dir, "pid"))
	capture := recordWatched(t, pid, 1, opened)
	checkNoSecret(t, capture, s)
}
