package record

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"nsprof/internal/unix"
)

// podmanValueFlags are podman's global flags that take a value in the
// next word (podman 4).
var podmanValueFlags = map[string]bool{
	"--cgroup-manager": true, "--config": true, "--conmon": true, "--connection": true, "-c": true,
	"--cpu-profile": true, "--db-backend": true, "--events-backend": true, "--hooks-dir": true,
	"--identity": true, "--imagestore": true, "--log-level": true, "--memory-profile": true,
	"--module": true, "--network-cmd-path": true, "--network-config-dir": true, "--out": true,
	"--registries-conf": true, "--root": true, "--runroot": true, "--runtime": true,
	"--runtime-flag": true, "--ssh": true, "--storage-driver": true, "--storage-opt": true,
	"--tmpdir": true, "--url": true, "--volumepath": true,
}

// podmanStart returns the index in argv of the "run" or "exec" of a
// podman command that starts a process in a container (podman run,
// podman exec, podman container run|exec), after which that command's
// options go; -1 when argv runs no such podman. Podman may come after a
// wrapper (runuser -u USER -- podman ..., env ..., sudo ...): the first
// word named podman is taken.
func podmanStart(argv []string) int {
	i := -1
	for k, a := range argv {
		if filepath.Base(a) == "podman" {
			i = k
			break
		}
	}
	if i < 0 {
		return -1
	}
	for j := i + 1; j < len(argv); j++ {
		a := argv[j]
		if strings.HasPrefix(a, "-") {
			if podmanValueFlags[a] {
				j++
			}
			continue
		}
		if a == "container" && j+1 < len(argv) {
			j++
			a = argv[j]
		}
		if a == "run" || a == "exec" {
			return j
		}
		return -1
	}
	return -1
}

// podmanWrapper makes the command's shell put the library's socket at fd
// 3 and the library itself at fd 4, the two fds podman's --preserve-fds=2
// hands the container's process, close the originals, and exec podman.
const podmanWrapper = `exec 3<&"$NSPROF_MEMPROF_FD" 4<&"$NSPROF_PRELOAD_FD" || exit 125; ` +
	`for fd in "$NSPROF_MEMPROF_FD" "$NSPROF_PRELOAD_FD"; do [ "$fd" -gt 4 ] && eval "exec $fd<&-"; done; ` +
	`unset NSPROF_MEMPROF_FD NSPROF_PRELOAD_FD; exec "$@"`

// podmanPreload returns the command and the descriptors that load the
// memprof library (--memprof, --calls) into the process a podman run or
// exec starts in its container, rootful or rootless, instead of into
// podman: the library, copied into a memfd, and the socket are handed to
// that process as fds 4 and 3 (--preserve-fds=2), and LD_PRELOAD names
// /proc/self/fd/4, so no path of the host needs to be reachable from
// the container's mount namespace nor readable by its user. ok is false
// when argv starts no process in a container.
func podmanPreload(argv []string, mp *memprof) (cmd []string, pass []passFile, ok bool, err error) {
	k := podmanStart(argv)
	if k < 0 {
		return argv, nil, false, nil
	}
	for _, a := range argv[k+1:] {
		if a == "--preserve-fds" || strings.HasPrefix(a, "--preserve-fds=") {
			return nil, nil, false, fmt.Errorf("%s: nsprof hands the container's process fds 3 and 4 itself (--preserve-fds=2) to load its library: drop --preserve-fds", strings.Join(argv[:k+1], " "))
		}
	}
	lib, err := os.ReadFile(mp.lib)
	if err != nil {
		return nil, nil, false, fmt.Errorf("memprof library: %w", err)
	}
	fd, err := unix.MemfdCreate("nsprof-preload", unix.MFD_CLOEXEC)
	if err != nil {
		return nil, nil, false, fmt.Errorf("memfd for the memprof library: %w", err)
	}
	f := os.NewFile(uintptr(fd), "nsprof-preload")
	for b := lib; len(b) > 0; {
		n, werr := f.Write(b)
		if werr != nil {
			f.Close()
			return nil, nil, false, fmt.Errorf("memfd for the memprof library: %w", werr)
		}
		b = b[n:]
	}
	p := mp.pass()
	flags := []string{"--preserve-fds=2", "-e", "LD_PRELOAD=/proc/self/fd/4", "-e", "NSPROF_MEMPROF_FD=3"}
	for _, kv := range p.extra {
		if strings.HasPrefix(kv, "NSPROF_MEMPROF_PRELOAD=") {
			continue // not into podman
		}
		flags = append(flags, "-e", kv)
	}
	p.extra = nil
	cmd = append(append(append([]string{"sh", "-c", podmanWrapper, "nsprof-podman"}, argv[:k+1]...), flags...), argv[k+1:]...)
	return cmd, []passFile{p, {name: "NSPROF_PRELOAD_FD", file: f}}, true, nil
}

// ErrPreloadNeedsCommand says why Options.Memprof and Options.Calls need
// a command: their library is loaded with LD_PRELOAD.
var ErrPreloadNeedsCommand = errors.New("the library is loaded with LD_PRELOAD, which only a starting program reads (at exec): it needs a command to run (-- cmd; in a container, -- podman run ... or -- podman exec ..., rootless too), not a running process (-p) or the whole system (-a); --probe counts the calls of running processes")
