package record

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"nsprof/container"
	"nsprof/internal/testutils"
)

// A process gone before its view was opened has the files it mapped
// opened through a live process in its namespaces (the peer), with the
// peer's credentials, before the host path is tried: only a file with the
// mapping's build-id, and only one the peer may read.
func TestSymbolizerThroughPeer(t *testing.T) {
	testutils.RequireRoot(t, "a peer of another user")
	self, id := selfBuildID(t)
	// A copy only root may read, in a directory anyone may enter.
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	private := filepath.Join(dir, "private")
	if err := os.WriteFile(private, data, 0o600); err != nil {
		t.Fatal(err)
	}
	nobody := exec.Command("sleep", "30")
	nobody.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	if err := nobody.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nobody.Process.Kill(); nobody.Wait() })
	me, gone := os.Getpid(), 1<<22+9
	other := append([]byte{id[0] ^ 0xff}, id[1:]...)
	for _, tc := range []struct {
		name string
		peer int
		m    container.Mapping
		via  string // "" for not opened
	}{
		{"through the peer", me, container.Mapping{Path: self, BuildID: id}, viaPeer + container.ViaRoot},
		{"another build-id", me, container.Mapping{Path: self, BuildID: other}, ""},
		{"no peer: the host path", 0, container.Mapping{Path: self, BuildID: id}, viaHostBuildID},
		{"a peer that may not read it", nobody.Process.Pid, container.Mapping{Path: private, BuildID: id}, ""},
		{"its owner's peer", me, container.Mapping{Path: private, BuildID: id}, viaPeer + container.ViaRoot},
		{"nothing to check the file against", me, container.Mapping{Path: self}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSymbolizer()
			defer s.close()
			s.open = func(pid int) (*container.Process, error) {
				if pid == gone {
					return nil, errors.New("no such process")
				}
				return container.Open(pid)
			}
			var asked []int
			s.peer = func(pid int) int {
				asked = append(asked, pid)
				return tc.peer
			}
			m := tc.m
			m.Start, m.End = 0x1000, 0x2000
			s.mapped(gone, m)
			o := s.procs[gone].maps[0].obj
			if tc.via == "" {
				if o.f != nil {
					t.Fatalf("opened via %q, want not opened", o.via)
				}
			} else if o.f == nil || o.via != tc.via {
				t.Fatalf("opened %v via %q (err %v), want via %q", o.f != nil, o.via, o.err, tc.via)
			}
			if (len(m.BuildID) > 0 || m.Inode != 0) != (len(asked) == 1 && asked[0] == gone) {
				t.Errorf("peer asked for %v", asked)
			}
			if strings.HasPrefix(o.via, viaPeer) && o.root == nil {
				t.Error("no view to look for its debug files in")
			}
		})
	}
}
