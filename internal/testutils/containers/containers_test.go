package containers

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

func TestBuildRootfs(t *testing.T) {
	r := BuildRootfs(t)
	if bytes.Equal(r.HotBuildID, r.DecoyBuildID) || len(r.HotBuildID) == 0 {
		t.Fatalf("build-ids: hot %x decoy %x", r.HotBuildID, r.DecoyBuildID)
	}
	if got := BuildID(t, filepath.Join(r.Dir, BinPath)); !bytes.Equal(got, r.HotBuildID) {
		t.Errorf("rootfs binary build-id %x, want %x", got, r.HotBuildID)
	}
	for _, p := range []string{r.Tarball, filepath.Join(r.Dir, HostSecret), filepath.Join(r.Dir, LinkDir(BinPath), LinkAbs)} {
		if _, err := os.Lstat(p); err != nil {
			t.Error(err)
		}
	}
	t.Run("decoy", func(t *testing.T) {
		InstallDecoy(t)
		if got := BuildID(t, BinPath); !bytes.Equal(got, r.DecoyBuildID) {
			t.Errorf("host %s build-id %x, want the decoy's %x", BinPath, got, r.DecoyBuildID)
		}
	})
	if _, err := os.Stat(BinPath); !os.IsNotExist(err) {
		t.Errorf("decoy %s still on the host after its test: %v", BinPath, err)
	}
}
