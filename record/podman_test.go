package record

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

func TestPodmanStart(t *testing.T) {
	for _, c := range []struct {
		argv string
		want int
	}{
		{"podman run --rm img prog", 1},
		{"/usr/bin/podman --root /x --runroot /y --log-level=debug run img", 6},
		{"runuser -u u -- env HOME=/h podman --storage-opt a=b container run img", 10},
		{"podman exec ctr prog", 1},
		{"podman --remote -c conn exec ctr", 4},
		{"podman start -a ctr", -1},
		{"podman", -1},
		{"./prog run", -1},
		{"sh -c 'podman run img' sh", -1},
	} {
		if got := podmanStart(strings.Fields(c.argv)); got != c.want {
			t.Errorf("%q: %d, want %d", c.argv, got, c.want)
		}
	}
}

func TestPodmanPreload(t *testing.T) {
	lib := filepath.Join(t.TempDir(), "lib.so")
	if err := os.WriteFile(lib, []byte("not really a library"), 0o600); err != nil {
		t.Fatal(err)
	}
	mp := &memprof{lib: lib, calls: true}
	argv := []string{"runuser", "-u", "u", "--", "podman", "--root", "/r", "run", "--rm", "img", "prog"}
	cmd, pass, ok, err := podmanPreload(argv, mp)
	if err != nil || !ok {
		t.Fatalf("podmanPreload: %v %v", ok, err)
	}
	defer pass[1].file.Close()
	want := []string{"sh", "-c", podmanWrapper, "nsprof-podman", "runuser", "-u", "u", "--", "podman", "--root", "/r", "run",
		"--preserve-fds=2", "-e", "LD_PRELOAD=/proc/self/fd/4", "-e", "NSPROF_MEMPROF_FD=3", "-e", "NSPROF_CALLS=1", "-e", "NSPROF_MEMPROF_ALLOCS=0",
		"--rm", "img", "prog"}
	if !slices.Equal(cmd, want) {
		t.Errorf("command\n%q\nwant\n%q", cmd, want)
	}
	if len(pass) != 2 || pass[0].name != "NSPROF_MEMPROF_FD" || len(pass[0].extra) != 0 || pass[1].name != "NSPROF_PRELOAD_FD" {
		t.Fatalf("pass %+v", pass)
	}
	b, err := os.ReadFile("/proc/self/fd/" + strconv.Itoa(int(pass[1].file.Fd())))
	if err != nil || string(b) != "not really a library" {
		t.Errorf("the memfd holds %q (%v)", b, err)
	}

	if _, _, ok, err := podmanPreload([]string{"./prog"}, mp); ok || err != nil {
		t.Errorf("a command without podman: %v %v", ok, err)
	}
	_, _, _, err = podmanPreload([]string{"podman", "run", "--preserve-fds", "1", "img"}, mp)
	if err == nil || !strings.Contains(err.Error(), "--preserve-fds") {
		t.Errorf("podman run --preserve-fds: %v", err)
	}
}
