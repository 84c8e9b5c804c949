// Package containers starts real containers for nsprof's tests: a process
// in its own mount and pid namespaces after pivot_root, a Flatpak-like
// bubblewrap sandbox, and podman containers (rootful and rootless, on
// kernel overlay or fuse-overlayfs storage).
//
// Every container runs the same fixture, fixtures/ctr-hot.c, at a path that
// does not exist on the host ([BinPath], or [FlatpakBinPath] in the
// Flatpak layout). While a container runs, a decoy binary with other
// symbols and another build-id sits on the host at [BinPath], so a test
// notices a tool that opens the host path instead of the container's file.
//
// The helpers need root and the tools in scripts/install-deps.sh; when
// something is missing they skip, or fail in CI (see testutils.RequireCI).
// Each registers t.Cleanup functions that kill what it started and remove
// what it created: processes, podman containers and storage, the rootless
// pause process, the test user's storage, the decoy and /dev/fuse's mode.
// The helpers are not safe for parallel tests.
package containers

import (
	"bytes"
	"debug/elf"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"

	"nsprof/internal/testutils"
)

// Paths inside the containers.
const (
	// BinPath is the target binary in the pivot_root and podman root file
	// systems. While a container runs, the decoy is installed here on the host.
	BinPath = "/opt/nsprof-ctr/bin/hot"
	// FlatpakBinPath is the target binary in the Flatpak-like sandbox.
	FlatpakBinPath = "/app/bin/hot"
	// FlatpakAppID is the application name in the sandbox's /.flatpak-info.
	FlatpakAppID = "org.nsprof.Hot"

	// HostSecret exists on the host with HostSecretData and inside the
	// pivot and podman roots with ContainerSecretData.
	HostSecret          = "/etc/nsprof-host-secret"
	HostSecretData      = "nsprof HOST secret: must never be read through a container\n"
	ContainerSecretData = "nsprof container file\n"
	// HostOnly exists on the host only.
	HostOnly = "/etc/nsprof-host-only"
)

// Symbolic links placed next to the target binary (in /opt/nsprof-ctr, or
// /app in the Flatpak layout) that try to leave the container's root.
const (
	LinkAbs      = "link-abs"      // -> /etc/nsprof-host-secret (absolute)
	LinkHostOnly = "link-hostonly" // -> /etc/nsprof-host-only (absolute, host only)
	LinkRel      = "link-rel"      // -> ../../../../../../../../etc/nsprof-host-only
	LinkProc     = "link-proc"     // -> /proc/self/root/etc/nsprof-host-only (magic link)
)

// LinkDir returns the directory holding the Link* symlinks for a target
// binary path: /opt/nsprof-ctr for [BinPath] and /app for [FlatpakBinPath].
func LinkDir(bin string) string {
	if bin == FlatpakBinPath {
		return "/app"
	}
	return "/opt/nsprof-ctr"
}

func fixtureSrc(name string) string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "fixtures", name)
}

// Binaries holds the host paths of the compiled fixtures.
type Binaries struct {
	Hot, Decoy, Pivot string
	HotBuildID        []byte
	DecoyBuildID      []byte
}

// Build compiles the fixtures (cached across runs by testutils.BuildC).
func Build(t testing.TB) Binaries {
	t.Helper()
	requireRoot(t)
	b := Binaries{
		Hot:   testutils.BuildC(t, fixtureSrc("ctr-hot.c"), "-O2", "-Wl,--build-id"),
		Decoy: testutils.BuildC(t, fixtureSrc("ctr-decoy.c"), "-O2", "-Wl,--build-id"),
		Pivot: testutils.BuildC(t, fixtureSrc("pivot-exec.c"), "-O2", "-static"),
	}
	b.HotBuildID = BuildID(t, b.Hot)
	b.DecoyBuildID = BuildID(t, b.Decoy)
	if bytes.Equal(b.HotBuildID, b.DecoyBuildID) {
		t.Fatalf("fixture and decoy have the same build-id %x", b.HotBuildID)
	}
	return b
}

// BuildID returns the GNU build-id of the ELF file at path.
func BuildID(t testing.TB, path string) []byte {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Fatalf("build-id of %s: %v", path, err)
	}
	defer f.Close()
	s := f.Section(".note.gnu.build-id")
	if s == nil {
		t.Fatalf("build-id of %s: no .note.gnu.build-id", path)
	}
	d, err := s.Data()
	if err != nil || len(d) < 16 {
		t.Fatalf("build-id of %s: %v", path, err)
	}
	namesz := f.ByteOrder.Uint32(d)
	descsz := f.ByteOrder.Uint32(d[4:])
	off := 12 + (namesz+3)&^3
	if int(off+descsz) > len(d) {
		t.Fatalf("build-id of %s: truncated note", path)
	}
	return bytes.Clone(d[off : off+descsz])
}

func requireRoot(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		testutils.RequireCI(t, "container tests need root (euid %d)", os.Geteuid())
	}
}

// Rootfs is a root file system for the pivot_root and podman containers.
type Rootfs struct {
	Dir     string // the tree
	Tarball string // the same tree as a tar file, for podman import
	Binaries
}

// BuildRootfs builds a root file system in a new temporary directory:
// [BinPath] (the dynamic fixture), the C library and loader it needs, the
// symlinks named Link*, a container-side [HostSecret], and /proc, /dev,
// /sys, /tmp mount points.
func BuildRootfs(t testing.TB) *Rootfs {
	t.Helper()
	b := Build(t)
	dir := t.TempDir()
	r := &Rootfs{Dir: filepath.Join(dir, "rootfs"), Tarball: filepath.Join(dir, "rootfs.tar"), Binaries: b}
	for _, d := range []string{"opt/nsprof-ctr/bin", "proc", "dev", "sys", "tmp", "etc", "run", "lib64", "lib/x86_64-linux-gnu"} {
		mkdir(t, filepath.Join(r.Dir, d))
	}
	copyFile(t, b.Hot, filepath.Join(r.Dir, BinPath), 0o755)
	copyLibs(t, b.Hot, r.Dir, "")
	writeFile(t, filepath.Join(r.Dir, HostSecret), ContainerSecretData)
	makeLinks(t, filepath.Join(r.Dir, LinkDir(BinPath)))
	run(t, "tar", "-C", r.Dir, "-cf", r.Tarball, ".")
	return r
}

// ProgramPath is where [StartPodmanRootlessProgram] puts the program at
// host path bin in its container: /opt/nsprof-ctr/bin/ and bin's name.
func ProgramPath(bin string) string {
	return filepath.Join(filepath.Dir(BinPath), filepath.Base(bin))
}

// programRootfs builds a root file system holding bin at ProgramPath and
// the libraries it links, with /proc, /dev, /sys, /tmp mount points, and
// returns it as a tar file.
func programRootfs(t testing.TB, bin string) string {
	t.Helper()
	dir := t.TempDir()
	root := filepath.Join(dir, "rootfs")
	for _, d := range []string{"opt/nsprof-ctr/bin", "proc", "dev", "sys", "tmp", "etc", "run", "lib64", "lib/x86_64-linux-gnu"} {
		mkdir(t, filepath.Join(root, d))
	}
	copyFile(t, bin, filepath.Join(root, ProgramPath(bin)), 0o755)
	copyLibs(t, bin, root, "")
	tarball := filepath.Join(dir, "rootfs.tar")
	run(t, "tar", "-C", root, "-cf", tarball, ".")
	return tarball
}

func makeLinks(t testing.TB, dir string) {
	t.Helper()
	for name, target := range map[string]string{
		LinkAbs:      HostSecret,
		LinkHostOnly: HostOnly,
		LinkRel:      "../../../../../../../.." + HostOnly,
		LinkProc:     "/proc/self/root" + HostOnly,
	} {
		if err := os.Symlink(target, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
}

// copyLibs copies the shared libraries and loader bin needs (from ldd) to
// the same paths under root, or, with flatDir set, into root/flatDir.
func copyLibs(t testing.TB, bin, root, flatDir string) {
	t.Helper()
	out := run(t, "ldd", bin)
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		var lib string
		switch {
		case len(f) >= 3 && f[1] == "=>" && strings.HasPrefix(f[2], "/"):
			lib = f[2]
		case len(f) >= 1 && strings.HasPrefix(f[0], "/"):
			lib = f[0]
		default:
			continue
		}
		real, err := filepath.EvalSymlinks(lib)
		if err != nil {
			t.Fatal(err)
		}
		dst := filepath.Join(root, lib)
		if flatDir != "" {
			dst = filepath.Join(root, flatDir, filepath.Base(lib))
		}
		mkdir(t, filepath.Dir(dst))
		copyFile(t, real, dst, 0o755)
	}
}

func mkdir(t testing.TB, dir string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
}

func writeFile(t testing.TB, path, data string) {
	t.Helper()
	mkdir(t, filepath.Dir(path))
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

func copyFile(t testing.TB, src, dst string, mode os.FileMode) {
	t.Helper()
	in, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, mode)
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

// run runs a command and returns its standard output; failure is fatal.
func run(t testing.TB, name string, args ...string) string {
	t.Helper()
	out, err := command(name, args...)
	if err != nil {
		t.Fatalf("%s %s: %v", name, strings.Join(args, " "), err)
	}
	return out
}

func command(name string, args ...string) (string, error) {
	cmd := exec.Command(name, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return string(out), fmt.Errorf("%v: %s", err, strings.TrimSpace(stderr.String()))
	}
	return string(out), nil
}

var decoy struct {
	mu    sync.Mutex
	users int
	lock  *os.File
}

// decoyLock serialises the decoy between test binaries (go test runs
// packages in parallel): whoever holds it owns the host paths.
const decoyLock = "/run/nsprof-ctr-decoy.lock"

// InstallDecoy installs the decoy binary at [BinPath] on the host, and
// [HostSecret] and [HostOnly], until the test ends. Calls nest: the files
// go when the last test using them ends. Across test processes an flock on
// /run/nsprof-ctr-decoy.lock makes the second wait for the first. A
// leftover decoy from a crashed run is replaced; any other file at those
// paths makes the test fail.
func InstallDecoy(t testing.TB) {
	t.Helper()
	b := Build(t)
	decoy.mu.Lock()
	defer decoy.mu.Unlock()
	if decoy.users == 0 {
		l, err := os.OpenFile(decoyLock, os.O_CREATE|os.O_RDWR, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		if err := syscall.Flock(int(l.Fd()), syscall.LOCK_EX); err != nil {
			l.Close()
			t.Fatal(err)
		}
		decoy.lock = l
		for _, p := range []string{BinPath, HostSecret, HostOnly} {
			if _, err := os.Lstat(p); err != nil {
				continue
			}
			if p == BinPath && bytes.Equal(buildIDOrNil(p), b.DecoyBuildID) {
				continue // left by a crashed run
			}
			if data, err := os.ReadFile(p); err == nil && string(data) == HostSecretData {
				continue
			}
			decoy.lock.Close()
			decoy.lock = nil
			t.Fatalf("decoy: %s already exists on the host and is not ours; remove it", p)
		}
		mkdir(t, filepath.Dir(BinPath))
		copyFile(t, b.Decoy, BinPath, 0o755)
		writeFile(t, HostSecret, HostSecretData)
		writeFile(t, HostOnly, HostSecretData)
	}
	decoy.users++
	t.Cleanup(func() {
		decoy.mu.Lock()
		defer decoy.mu.Unlock()
		if decoy.users--; decoy.users == 0 {
			os.Remove(BinPath)
			os.Remove(filepath.Dir(BinPath))
			os.Remove(filepath.Dir(filepath.Dir(BinPath)))
			os.Remove(HostSecret)
			os.Remove(HostOnly)
			decoy.lock.Close() // releases the flock
			decoy.lock = nil
		}
	})
}

func buildIDOrNil(path string) []byte {
	f, err := elf.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	s := f.Section(".note.gnu.build-id")
	if s == nil {
		return nil
	}
	d, err := s.Data()
	if err != nil || len(d) < 16 {
		return nil
	}
	off := 12 + (f.ByteOrder.Uint32(d)+3)&^3
	n := f.ByteOrder.Uint32(d[4:])
	if int(off+n) > len(d) {
		return nil
	}
	return d[off : off+n]
}
