package containers

import (
	"context"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"nsprof/internal/testutils"
)

// RootfsWith builds a root file system in a new temporary directory
// holding the files at paths, at the same paths, and the shared
// libraries and loader each needs (from ldd), with /proc, /dev, /sys,
// /tmp, /etc and /run mount points; it returns the directory.
func RootfsWith(t testing.TB, paths ...string) string {
	t.Helper()
	root := filepath.Join(t.TempDir(), "rootfs")
	for _, d := range []string{"proc", "dev", "sys", "tmp", "etc", "run"} {
		mkdir(t, filepath.Join(root, d))
	}
	for _, p := range paths {
		mkdir(t, filepath.Join(root, filepath.Dir(p)))
		copyFile(t, p, filepath.Join(root, p), 0o755)
		copyLibs(t, p, root, "")
	}
	return root
}

// PodmanRunArgs returns the command line that runs argv in a rootful
// podman container on root file system rootfs (podman run --rm --rootfs),
// with a private --root and --runroot under a temporary directory (the
// host's storage is not touched), runtime runc and no network, plus
// runFlags (-e, --preserve-fds, ...). The returned env must be set for
// podman (CONTAINERS_CONF and CONTAINERS_STORAGE_CONF). Cleanup wipes
// the storage.
func PodmanRunArgs(t testing.TB, rootfs string, runFlags, argv []string) (args, env []string) {
	t.Helper()
	podman := testutils.LookPathOrSkip(t, "podman")
	testutils.LookPathOrSkip(t, "runc")
	requireRoot(t)
	e := privatePodman(t, "overlay")
	// As startPodman: rlimits runc can set without CAP_SYS_RESOURCE.
	n := strconv.FormatUint(hardNofile(), 10)
	args = append(append([]string{podman}, e.flags...), "run", "--rm", "--network", "none",
		"--ulimit", "nofile="+n+":"+n, "--ulimit", "nproc=32768:32768")
	args = append(append(append(args, runFlags...), "--rootfs", rootfs), argv...)
	return args, e.env
}

// PodmanRunRootlessArgs returns the command line that runs the program at
// host path bin with args in a rootless podman container (podman run
// --rm, no network), started as [RootlessUser] through runuser from /,
// on an image holding bin at [ProgramPath] and the libraries it links,
// imported into a private storage as [StartPodmanRootlessProgram]'s;
// runFlags go after run. Cleanup removes the storage, the runtime
// directory and the pause process.
func PodmanRunRootlessArgs(t testing.TB, bin string, runFlags []string, args ...string) []string {
	t.Helper()
	testutils.LookPathOrSkip(t, "podman")
	testutils.LookPathOrSkip(t, "newuidmap")
	testutils.LookPathOrSkip(t, "runuser")
	env := testutils.LookPathOrSkip(t, "env")
	requireRoot(t)
	e, tarball := rootlessEnv(t, "overlay", programRootfs(t, bin))
	image := "localhost/nsprof-run-" + strings.ToLower(filepath.Base(ProgramPath(bin))) + ":latest"
	if _, err := e.run("import", "-q", tarball, image); err != nil {
		t.Fatal(err)
	}
	n := strconv.FormatUint(hardNofile(), 10)
	run := append([]string{"run", "--rm", "--network", "none", "--ulimit", "nofile=" + n + ":" + n, "--ulimit", "nproc=32768:32768"}, runFlags...)
	c := e.cmd(context.Background(), append(append(run, image, ProgramPath(bin)), args...)...)
	// The user cannot enter the caller's working directory, maybe.
	return append([]string{env, "-C", "/", c.Path}, c.Args[1:]...)
}
