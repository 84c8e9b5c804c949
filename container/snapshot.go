package container

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path"
	"strconv"
	"strings"
	"sync"

	"nsprof/internal/unix"
	"nsprof/proc"
)

// snapshot is what Open records about a process while it is alive.
type snapshot struct {
	pid int

	status    proc.Status
	statusErr error
	mounts    []proc.Mount
	mountsErr error
	cgroups   []proc.Cgroup
	rootLink  string
	mntNS     uint64
	selfMntNS uint64

	conmon    *conmonArgs
	conmonUID int // real uid of conmon; -1 unknown

	// storageCreds are those of the podman user whose storage holds the
	// container (conmon's; the process's own without a conmon parent):
	// its storage files are read with them.
	storageCreds    unix.Creds
	storageCredsErr error

	// fuseOverlay maps the device of a fuse-overlayfs mount of the process
	// to the layers from the fuse-overlayfs command line.
	fuseOverlay map[proc.Dev]overlayDirs

	flatpak    *flatpakInfo
	flatpakErr error

	storageOnce sync.Once
	storage     *podmanStorage
	storageErr  error
}

// selfMntNS returns this process's mount namespace id, 0 if unknown: read
// once, as nothing here joins another (see the package doc).
var selfMntNS = sync.OnceValue(func() uint64 {
	id, _ := proc.NamespaceID(proc.Self, "mnt")
	return id
})

// maxAncestors bounds the walk up the process tree to find conmon.
const maxAncestors = 8

func takeSnapshot(pid int, p *Process) *snapshot {
	s := &snapshot{pid: pid, conmonUID: -1}
	s.status, s.statusErr = proc.ReadStatus(pid)
	// Before anything is opened through the process: with its rights.
	p.openCreds(s.status, s.statusErr)
	s.mounts, s.mountsErr = proc.ReadMountInfo(pid)
	s.cgroups, _ = proc.ReadCgroup(pid)
	if l, err := os.Readlink(fmt.Sprintf("/proc/%d/root", pid)); err == nil {
		s.rootLink = l
	}
	s.mntNS, _ = proc.NamespaceID(pid, "mnt")
	s.selfMntNS = selfMntNS()

	// conmon is the parent of a podman container's init; look a few levels
	// up for exec sessions and nested inits. A process in this process's
	// own mount namespace and root is in no container: its ancestors are
	// not read (two /proc reads each, for every process a system-wide
	// recording sees start).
	ppid := s.status.PPid
	if s.ownMounts() {
		ppid = 0
	}
	for i := 0; i < maxAncestors && ppid > 1; i++ {
		st, err := proc.ReadStatus(ppid)
		if err != nil {
			break
		}
		if argv, err := proc.ReadCmdline(ppid); err == nil {
			if a, ok := parseConmonCmdline(argv); ok {
				s.conmon = &a
				s.conmonUID = int(st.Uid.Real)
				s.storageCreds = procCreds(st)
				break
			}
		}
		ppid = st.PPid
	}

	if s.conmon == nil {
		s.storageCreds, s.storageCredsErr = p.creds, p.credsErr
	}

	for _, m := range s.mounts {
		if m.FSType == "fuse.fuse-overlayfs" {
			s.fuseOverlay = findFuseOverlayfs(s.mounts)
			break
		}
	}

	if f, err := p.OpenInRoot("/.flatpak-info"); err == nil {
		fi, perr := parseFlatpakInfo(f)
		f.Close()
		if perr == nil {
			s.flatpak = &fi
		} else {
			s.flatpakErr = perr
		}
	} else {
		s.flatpakErr = err
	}

	if s.podmanID() != "" {
		s.podmanStorage()
	}
	return s
}

// ownMounts reports whether the process was seen in this process's own
// mount namespace, with its root at "/": then it is in no container.
func (s *snapshot) ownMounts() bool {
	return s.mntNS != 0 && s.mntNS == s.selfMntNS && s.rootLink == "/"
}

// podmanID returns the container id from conmon or the libpod cgroup.
func (s *snapshot) podmanID() string {
	if s.conmon != nil {
		return s.conmon.ID
	}
	for _, c := range s.cgroups {
		if id, ok := libpodIDFromCgroup(c.Path); ok {
			return id
		}
	}
	return ""
}

// findFuseOverlayfs finds the fuse-overlayfs processes serving the
// fuse-overlayfs mounts in mounts. A fuse-overlayfs process is matched to a
// mount when its own mount table shows its mount point (the last argument)
// with the same device number.
func findFuseOverlayfs(mounts []proc.Mount) map[proc.Dev]overlayDirs {
	want := map[proc.Dev]bool{}
	for _, m := range mounts {
		if m.FSType == "fuse.fuse-overlayfs" {
			want[m.Dev] = true
		}
	}
	out := map[proc.Dev]overlayDirs{}
	pids, _ := proc.PIDs()
	for _, pid := range pids {
		comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
		if err != nil || strings.TrimSpace(string(comm)) != "fuse-overlayfs" {
			continue
		}
		argv, err := proc.ReadCmdline(pid)
		if err != nil {
			continue
		}
		o, ok := parseFuseOverlayfsCmdline(argv)
		if !ok || o.Merged == "" {
			continue
		}
		theirs, err := proc.ReadMountInfo(pid)
		if err != nil {
			continue
		}
		for _, m := range theirs {
			if m.FSType == "fuse.fuse-overlayfs" && want[m.Dev] && path.Clean(m.MountPoint) == path.Clean(o.Merged) {
				out[m.Dev] = o
			}
		}
		if len(out) == len(want) {
			break
		}
	}
	return out
}

// podmanStorage is where a podman container's files live on the host.
type podmanStorage struct {
	GraphRoot string
	Driver    string // "overlay" or "vfs"
	ID        string
	Names     []string
	Layer     string   // the container's own (top) layer
	Dirs      []string // layer directories, top first
}

// Root returns the host directory that is (or was) the container's root.
func (st *podmanStorage) Root() string {
	if st.Driver == "vfs" {
		return path.Join(st.GraphRoot, "vfs", "dir", st.Layer)
	}
	return path.Join(st.GraphRoot, st.Driver, st.Layer, "merged")
}

// podmanStorage finds the container's storage once: graphroots come from
// conmon's bundle path, its exit command's --root, the rootful default
// /var/lib/containers/storage and every /etc/passwd user's
// ~/.local/share/containers/storage.
func (s *snapshot) podmanStorage() (*podmanStorage, error) {
	s.storageOnce.Do(func() {
		s.storageErr = s.asStorageOwner(func() error {
			var err error
			s.storage, err = s.findStorage()
			return err
		})
	})
	return s.storage, s.storageErr
}

// asStorageOwner runs fn with the credentials of the storage's owner.
func (s *snapshot) asStorageOwner(fn func() error) error {
	if s.storageCredsErr != nil {
		return s.storageCredsErr
	}
	return asCreds(s.storageCreds, fn)
}

type graphroot struct{ dir, driver string }

func (s *snapshot) findStorage() (*podmanStorage, error) {
	id := s.podmanID()
	if id == "" {
		return nil, errors.New("not a podman container (no conmon parent, no libpod cgroup)")
	}
	name := ""
	var roots []graphroot
	if c := s.conmon; c != nil {
		name = c.Name
		if gr, drv, ok := graphrootFromBundle(c.Bundle, c.ID); ok {
			roots = append(roots, graphroot{gr, drv})
		}
		if c.Root != "" {
			roots = append(roots, graphroot{c.Root, c.StorageDriver})
		}
	}
	users := passwdHomes()
	if s.conmonUID > 0 {
		for _, u := range users {
			if u.uid == s.conmonUID {
				roots = append(roots, graphroot{path.Join(u.home, ".local/share/containers/storage"), ""})
			}
		}
	}
	roots = append(roots, graphroot{"/var/lib/containers/storage", ""})
	for _, u := range users {
		roots = append(roots, graphroot{path.Join(u.home, ".local/share/containers/storage"), ""})
	}
	seen := map[graphroot]bool{}
	var tried []string
	for _, gr := range roots {
		drivers := []string{"overlay", "vfs"}
		if gr.driver != "" {
			drivers = []string{gr.driver}
		}
		for _, drv := range drivers {
			key := graphroot{path.Clean(gr.dir), drv}
			if seen[key] {
				continue
			}
			seen[key] = true
			st, err := lookupStorage(key.dir, drv, id, name)
			if err == nil {
				return st, nil
			}
			if !errors.Is(err, os.ErrNotExist) {
				tried = append(tried, err.Error())
			}
		}
	}
	msg := fmt.Sprintf("container %s not found in %d storage locations", shortID(id), len(seen))
	if len(tried) > 0 {
		msg += ": " + strings.Join(tried, "; ")
	}
	return nil, errors.New(msg)
}

// openRegular opens the file at p if it is a regular file, without
// waiting (O_NONBLOCK) for a FIFO put there by the user whose storage
// it is in.
func openRegular(p string) (*os.File, error) {
	f, err := os.OpenFile(p, os.O_RDONLY|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("%s: not a regular file", p)
	}
	return f, nil
}

// lookupStorage reads containers.json and layers.json of one graphroot.
func lookupStorage(gr, driver, id, name string) (*podmanStorage, error) {
	var cs []storageContainer
	found := false
	for _, f := range []string{"containers.json", "volatile-containers.json"} {
		p := path.Join(gr, driver+"-containers", f)
		fh, err := openRegular(p)
		if err != nil {
			continue
		}
		found = true
		c, err := parseContainersJSON(fh)
		fh.Close()
		if err != nil {
			return nil, fmt.Errorf("%s: %v", p, err)
		}
		cs = append(cs, c...)
	}
	if !found {
		return nil, os.ErrNotExist
	}
	c, ok := findContainer(cs, id, name)
	if !ok {
		return nil, os.ErrNotExist
	}
	st := &podmanStorage{GraphRoot: gr, Driver: driver, ID: c.ID, Names: c.Names, Layer: c.Layer}
	if driver == "vfs" {
		// vfs layers are full copies: the container's layer holds everything.
		st.Dirs = []string{path.Join(gr, "vfs", "dir", c.Layer)}
		return st, nil
	}
	var ls []storageLayer
	for _, f := range []string{"layers.json", "volatile-layers.json"} {
		p := path.Join(gr, driver+"-layers", f)
		fh, err := openRegular(p)
		if err != nil {
			continue
		}
		l, err := parseLayersJSON(fh)
		fh.Close()
		if err != nil {
			return nil, fmt.Errorf("%s: %v", p, err)
		}
		ls = append(ls, l...)
	}
	chain, err := layerChain(ls, c.Layer)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", path.Join(gr, driver+"-layers"), err)
	}
	for _, l := range chain {
		st.Dirs = append(st.Dirs, path.Join(gr, driver, l, "diff"))
	}
	return st, nil
}

type passwdUser struct {
	uid  int
	home string
}

// passwdHomes lists the users of /etc/passwd that have a real home.
func passwdHomes() []passwdUser {
	f, err := os.Open("/etc/passwd")
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []passwdUser
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Split(sc.Text(), ":")
		if len(fields) < 7 {
			continue
		}
		uid, err := strconv.Atoi(fields[2])
		home := fields[5]
		if err != nil || !path.IsAbs(home) || home == "/" || home == "/nonexistent" {
			continue
		}
		out = append(out, passwdUser{uid, home})
	}
	return out
}

func shortID(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}
