//go:build linux

package container

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path"
	"strings"
	"syscall"
	"testing"
	"time"

	"nsprof/internal/testutils/containers"
	"nsprof/proc"
	"nsprof/symbol"
)

// mainMapping returns the mapping of bin at file offset 0 in pid.
func mainMapping(t *testing.T, pid int, bin string) Mapping {
	t.Helper()
	maps, err := proc.ReadMaps(pid)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range maps {
		if m.Path == bin && m.Offset == 0 {
			return MappingFromProc(m)
		}
	}
	t.Fatalf("pid %d maps no %s at offset 0", pid, bin)
	return Mapping{}
}

func fileBuildID(t *testing.T, f *os.File) []byte {
	t.Helper()
	id, err := symbol.ReadBuildID(f)
	if err != nil {
		t.Fatalf("build-id of %s: %v", f.Name(), err)
	}
	return id
}

// liveCase describes one container kind for the shared checks.
type liveCase struct {
	pid    int
	bin    string   // target binary path inside the container
	via    string   // expected via of OpenMapped
	routes []string // routes that must each find the file on their own
	// rootDenied: the host cannot read through /proc/PID/root (rootless
	// fuse-overlayfs), so OpenInRoot fails with EACCES.
	rootDenied bool
	// secretInRoot: the root holds its own /etc/nsprof-host-secret.
	secretInRoot bool
}

func checkLive(t *testing.T, c liveCase, bins containers.Binaries) *Process {
	t.Helper()
	p, err := Open(c.pid)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	m := mainMapping(t, c.pid, c.bin)

	t.Run("OpenMapped", func(t *testing.T) {
		mb := m
		mb.BuildID = bins.HotBuildID
		f, via, err := p.OpenMapped(mb)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if via != c.via {
			t.Errorf("via = %q, want %q", via, c.via)
		}
		if id := fileBuildID(t, f); !bytes.Equal(id, bins.HotBuildID) {
			t.Errorf("build-id %x, want the fixture's %x (decoy %x)", id, bins.HotBuildID, bins.DecoyBuildID)
		}
		// Inode only, no build-id.
		f2, via2, err := p.OpenMapped(m)
		if err != nil {
			t.Fatalf("inode-only mapping: %v", err)
		}
		defer f2.Close()
		if id := fileBuildID(t, f2); !bytes.Equal(id, bins.HotBuildID) {
			t.Errorf("inode-only via %s: build-id %x, want %x", via2, id, bins.HotBuildID)
		}
	})

	t.Run("Routes", func(t *testing.T) {
		for _, r := range c.routes {
			for _, withID := range []bool{true, false} {
				mm := m
				if withID {
					mm.BuildID = bins.HotBuildID
				}
				f, via, err := p.openMapped(mm, map[string]bool{r: true, ViaTaskRoot: r == ViaRoot})
				if err != nil {
					t.Errorf("route %s (build-id %t): %v", r, withID, err)
					continue
				}
				if id := fileBuildID(t, f); !bytes.Equal(id, bins.HotBuildID) {
					t.Errorf("route %s: build-id %x, want %x", r, id, bins.HotBuildID)
				}
				t.Logf("route %s (build-id %t): %s via %s", r, withID, f.Name(), via)
				f.Close()
			}
		}
	})

	t.Run("WrongBuildIDRejected", func(t *testing.T) {
		mb := m
		mb.BuildID = bins.DecoyBuildID
		f, via, err := p.OpenMapped(mb)
		if err == nil {
			f.Close()
			t.Fatalf("mapping with the decoy's build-id opened %s via %s", f.Name(), via)
		}
		if !strings.Contains(err.Error(), "rejected") {
			t.Errorf("error does not say a candidate was rejected: %v", err)
		}
		t.Logf("%v", err)
		mi := m
		mi.Inode++
		if f, via, err := p.OpenMapped(mi); err == nil {
			f.Close()
			t.Fatalf("mapping with a wrong inode opened %s via %s", f.Name(), via)
		}
	})

	t.Run("OpenInRoot", func(t *testing.T) {
		f, err := p.OpenInRoot(c.bin)
		if c.rootDenied {
			if err == nil {
				f.Close()
				t.Fatalf("OpenInRoot(%s) worked; expected EACCES on rootless fuse-overlayfs", c.bin)
			}
			if !errors.Is(err, syscall.EACCES) {
				t.Errorf("OpenInRoot(%s): %v, want EACCES", c.bin, err)
			}
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if id := fileBuildID(t, f); !bytes.Equal(id, bins.HotBuildID) {
			t.Errorf("OpenInRoot(%s): build-id %x, want %x (decoy %x)", c.bin, id, bins.HotBuildID, bins.DecoyBuildID)
		}
	})

	t.Run("NoEscape", func(t *testing.T) {
		dir := containers.LinkDir(c.bin)
		for _, name := range []string{
			path.Join(dir, containers.LinkAbs),
			path.Join(dir, containers.LinkHostOnly),
			path.Join(dir, containers.LinkRel),
			path.Join(dir, containers.LinkProc),
			"/../../../../.." + containers.HostOnly,
			"/../../../../.." + containers.HostSecret,
			path.Join(dir, "../../../../../../..", containers.HostOnly),
		} {
			f, err := p.OpenInRoot(name)
			if err != nil {
				t.Logf("OpenInRoot(%s): %v", name, err)
				continue
			}
			data, _ := io.ReadAll(f)
			f.Close()
			if string(data) == containers.HostSecretData {
				t.Errorf("OpenInRoot(%s) read the HOST file %s", name, containers.HostSecret)
			} else if !c.secretInRoot || string(data) != containers.ContainerSecretData {
				t.Errorf("OpenInRoot(%s) = %q, want an error or the container's own file", name, data)
			}
		}
		// OpenFile's fallbacks (storage layers, overlay dirs, Flatpak
		// paths, host mounts of the same device) must not escape either.
		for _, name := range []string{
			containers.HostSecret,
			containers.HostOnly,
			path.Join(dir, containers.LinkAbs),
			path.Join(dir, containers.LinkHostOnly),
			path.Join(dir, containers.LinkRel),
			path.Join(dir, containers.LinkProc),
			"/../../../../.." + containers.HostOnly,
		} {
			f, via, err := p.OpenFile(name)
			if err != nil {
				continue
			}
			data, _ := io.ReadAll(f)
			f.Close()
			if string(data) == containers.HostSecretData || name == containers.HostOnly {
				t.Errorf("OpenFile(%s) read the HOST file via %s: %q", name, via, data)
			} else if !c.secretInRoot || string(data) != containers.ContainerSecretData {
				t.Errorf("OpenFile(%s) via %s = %q, want an error or the container's own file", name, via, data)
			}
		}
		if c.secretInRoot {
			f, via, err := p.OpenFile(containers.HostSecret)
			if err != nil {
				t.Errorf("OpenFile(%s): %v", containers.HostSecret, err)
			} else {
				data, _ := io.ReadAll(f)
				f.Close()
				if string(data) != containers.ContainerSecretData {
					t.Errorf("OpenFile(%s) via %s = %q, want the container's %q", containers.HostSecret, via, data, containers.ContainerSecretData)
				}
			}
		}
		if c.secretInRoot && !c.rootDenied {
			f, err := p.OpenInRoot(path.Join(dir, containers.LinkAbs))
			if err != nil {
				t.Fatalf("in-root symlink target: %v", err)
			}
			data, _ := io.ReadAll(f)
			f.Close()
			if string(data) != containers.ContainerSecretData {
				t.Errorf("link-abs read %q, want the container's %q", data, containers.ContainerSecretData)
			}
		}
	})
	return p
}

func TestPivot(t *testing.T) {
	bins := containers.Build(t)
	pid := containers.StartPivot(t)
	p := checkLive(t, liveCase{
		pid: pid, bin: containers.BinPath, via: ViaMapFiles,
		routes:       []string{ViaMapFiles, ViaRoot, ViaMountinfo},
		secretInRoot: true,
	}, bins)
	id, err := Identify(pid)
	if err != nil {
		t.Fatal(err)
	}
	if id.Kind != KindNamespace || id.NSPID != 1 || !strings.HasSuffix(id.Root, "/rootfs") {
		t.Errorf("Identify = %+v, want namespace, NSPID 1, Root .../rootfs", id)
	}
	t.Logf("Identify: %s %+v", id, id)

	// After the process exits, the pinned root still reaches files on the
	// root mount (a bind mount of the rootfs directory).
	m := mainMapping(t, pid, containers.BinPath)
	m.BuildID = bins.HotBuildID
	syscall.Kill(pid, syscall.SIGKILL)
	containers.WaitExit(t, pid, 10*time.Second)
	f, err := p.OpenInRoot(containers.BinPath)
	if err != nil {
		t.Fatalf("OpenInRoot after exit: %v", err)
	}
	if id := fileBuildID(t, f); !bytes.Equal(id, bins.HotBuildID) {
		t.Errorf("after exit: build-id %x, want %x", id, bins.HotBuildID)
	}
	f.Close()
	f, via, err := p.OpenMapped(m)
	if err != nil {
		t.Fatalf("OpenMapped after exit: %v", err)
	}
	f.Close()
	if via != ViaRoot {
		t.Errorf("after exit: via %s, want root (map_files is gone)", via)
	}
	// OpenMapFile takes map_files alone, gone with the process.
	if f, via, err := p.OpenMapFile(m); err == nil {
		f.Close()
		t.Errorf("OpenMapFile after exit: reached via %s, want map_files alone", via)
	} else if strings.Contains(err.Error(), ViaRoot+":") {
		t.Errorf("OpenMapFile after exit tried the root: %v", err)
	}
}

func TestBwrapFlatpak(t *testing.T) {
	bins := containers.Build(t)
	pid, dirs := containers.StartBwrapFlatpak(t)
	p := checkLive(t, liveCase{
		pid: pid, bin: containers.FlatpakBinPath, via: ViaMapFiles,
		routes: []string{ViaMapFiles, ViaRoot, ViaFlatpak, ViaMountinfo},
	}, bins)
	id, err := Identify(pid)
	if err != nil {
		t.Fatal(err)
	}
	if id.Kind != KindFlatpak || id.AppID != containers.FlatpakAppID || id.NSPID != 2 || id.Root != dirs.App {
		t.Errorf("Identify = %+v, want flatpak %s, NSPID 2, Root %s", id, containers.FlatpakAppID, dirs.App)
	}
	if s := id.String(); s != "flatpak:"+containers.FlatpakAppID {
		t.Errorf("String() = %q", s)
	}

	// After the sandbox is gone, /app was a separate bind mount over the
	// tmpfs root: the kernel detached it, so the pinned root no longer
	// reaches it, but the flatpak route (recorded at Open) still does.
	m := mainMapping(t, pid, containers.FlatpakBinPath)
	m.BuildID = bins.HotBuildID
	syscall.Kill(pid, syscall.SIGKILL)
	containers.WaitExit(t, pid, 10*time.Second)
	time.Sleep(100 * time.Millisecond)
	if f, err := p.OpenInRoot(containers.FlatpakBinPath); err == nil {
		t.Logf("OpenInRoot after exit still works: %s", f.Name())
		f.Close()
	} else {
		t.Logf("OpenInRoot after exit: %v", err)
	}
	f, via, err := p.OpenMapped(m)
	if err != nil {
		t.Fatalf("OpenMapped after exit: %v", err)
	}
	f.Close()
	t.Logf("after exit: via %s", via)
}
