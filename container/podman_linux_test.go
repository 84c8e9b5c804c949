//go:build linux

package container

import (
	"bytes"
	"strings"
	"syscall"
	"testing"
	"time"

	"nsprof/internal/testutils/containers"
)

func checkPodmanIdentity(t *testing.T, pid int, id string, rootless bool) Identity {
	t.Helper()
	ident, err := Identify(pid)
	if err != nil {
		t.Fatal(err)
	}
	if ident.Kind != KindPodman || ident.ID != id || !strings.HasPrefix(ident.Name, "nsprof-hot-") ||
		ident.Rootless != rootless || ident.NSPID != 1 || ident.Root == "" {
		t.Errorf("Identify = %+v, want podman id %s, name nsprof-hot-*, rootless %t, NSPID 1, a Root", ident, id, rootless)
	}
	want := "podman:" + ident.Name + " (" + id[:12]
	if rootless {
		want += ", rootless"
	}
	if s := ident.String(); s != want+")" {
		t.Errorf("String() = %q, want %q", s, want+")")
	}
	t.Logf("Identify: %s, Root %s", ident, ident.Root)
	return ident
}

// checkAfterExit kills the target and reports what still opens through p,
// then removes the container and its storage and checks nothing wrong is
// returned.
func checkAfterExit(t *testing.T, p *Process, pid int, id string, bins containers.Binaries) {
	t.Helper()
	m := mainMapping(t, pid, containers.BinPath)
	m.BuildID = bins.HotBuildID
	syscall.Kill(pid, syscall.SIGKILL)
	containers.WaitExit(t, pid, 20*time.Second)
	if f, via, err := p.OpenMapped(m); err != nil {
		t.Logf("after exit, before removal: %v", err)
	} else {
		t.Logf("after exit, before removal: %s via %s", f.Name(), via)
		f.Close()
	}
	containers.RemovePodman(t, id)
	f, via, err := p.OpenMapped(m)
	if err != nil {
		t.Logf("after removal: %v", err)
		return
	}
	defer f.Close()
	if got := fileBuildID(t, f); !bytes.Equal(got, bins.HotBuildID) {
		t.Errorf("after removal: %s via %s has build-id %x, want %x", f.Name(), via, got, bins.HotBuildID)
	}
	t.Logf("after removal: still %s via %s (the pinned root keeps the detached mount alive)", f.Name(), via)
}

func TestPodmanOverlay(t *testing.T) {
	bins := containers.Build(t)
	pid, id := containers.StartPodman(t, "overlay")
	p := checkLive(t, liveCase{
		pid: pid, bin: containers.BinPath, via: ViaMapFiles,
		routes:       []string{ViaMapFiles, ViaRoot, ViaStorageLayer, ViaOverlayLower, ViaMountinfo},
		secretInRoot: true,
	}, bins)
	checkPodmanIdentity(t, pid, id, false)
	checkAfterExit(t, p, pid, id, bins)
}

func TestPodmanFuse(t *testing.T) {
	bins := containers.Build(t)
	pid, id := containers.StartPodman(t, "fuse")
	p := checkLive(t, liveCase{
		pid: pid, bin: containers.BinPath, via: ViaMapFiles,
		routes:       []string{ViaMapFiles, ViaRoot, ViaStorageLayer, ViaOverlayLower, ViaMountinfo},
		secretInRoot: true,
	}, bins)
	checkPodmanIdentity(t, pid, id, false)
	checkAfterExit(t, p, pid, id, bins)
}

func TestPodmanRootlessOverlay(t *testing.T) {
	bins := containers.Build(t)
	pid, id := containers.StartPodmanRootless(t, "overlay")
	p := checkLive(t, liveCase{
		pid: pid, bin: containers.BinPath, via: ViaMapFiles,
		routes:       []string{ViaMapFiles, ViaRoot, ViaStorageLayer, ViaOverlayLower},
		secretInRoot: true,
	}, bins)
	checkPodmanIdentity(t, pid, id, true)
	checkAfterExit(t, p, pid, id, bins)
}

func TestPodmanRootlessFuse(t *testing.T) {
	bins := containers.Build(t)
	pid, id := containers.StartPodmanRootless(t, "fuse")
	p := checkLive(t, liveCase{
		pid: pid, bin: containers.BinPath, via: ViaStorageLayer,
		routes:       []string{ViaStorageLayer, ViaOverlayLower},
		rootDenied:   true,
		secretInRoot: true,
	}, bins)
	checkPodmanIdentity(t, pid, id, true)
	checkAfterExit(t, p, pid, id, bins)
}
