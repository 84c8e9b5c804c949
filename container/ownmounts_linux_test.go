//go:build linux

package container

import (
	"bufio"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"nsprof/proc"
)

// A process in the recorder's own mount namespace and root is in no
// container, whatever its ancestors' command lines look like: Open does
// not walk up to them (a system-wide recording opens every process it
// sees start). The parent here calls itself conmon, with a -c "id", as
// podman's conmon does.
func TestOwnMountsHost(t *testing.T) {
	cmd := exec.Command("bash", "-c", `exec -a /usr/bin/conmon bash -c 'sleep 30 & echo $!; wait'`)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("reading the child's pid: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		t.Fatalf("child pid %q: %v", line, err)
	}
	t.Cleanup(func() { exec.Command("kill", strconv.Itoa(pid)).Run() })
	p, err := Open(pid)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if id := p.Identity(); id.Kind != KindHost {
		t.Errorf("child of a conmon look-alike in the host's mount namespace: identity %+v, want kind %q", id, KindHost)
	}
}

// OnHost says what Identify says of a host process, and leaves the
// others to Open: another mount namespace or root, a libpod cgroup.
func TestOnHost(t *testing.T) {
	self, err := proc.NamespaceID(proc.Self, "mnt")
	if err != nil {
		t.Fatal(err)
	}
	cg, err := proc.ReadCgroup(proc.Self)
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, c := range cg {
		paths = append(paths, c.Path)
	}
	id, err := Identify(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if got := OnHost(self, "/", paths); got != (id.Kind == KindHost) {
		t.Errorf("OnHost of this process = %v, Identify says %q", got, id.Kind)
	}
	for _, c := range []struct {
		ns    uint64
		root  string
		paths []string
	}{
		{self + 1, "/", paths},
		{0, "/", paths},
		{self, "/srv/jail", paths},
		{self, "/", []string{"/machine.slice/libpod-0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef.scope/container"}},
	} {
		if OnHost(c.ns, c.root, c.paths) {
			t.Errorf("OnHost(%d, %q, %q) = true, want false", c.ns, c.root, c.paths)
		}
	}
}
