package container

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"nsprof/internal/unix"
	"nsprof/proc"
	"nsprof/symbol"
)

// ErrClosed is returned by methods of a closed [Process].
var ErrClosed = os.ErrClosed

// Mapping identifies one file mapping of a process.
type Mapping struct {
	Path       string // as in /proc/PID/maps or the MMAP2 record (the process's view)
	Start, End uint64 // address range, for /proc/PID/map_files/<start>-<end>
	Offset     uint64
	Dev        uint64 // st_dev as unix.Mkdev(major,minor); 0 unknown
	Inode      uint64 // 0 unknown
	BuildID    []byte // from MMAP2 build-id mode or elsewhere; nil unknown
}

// MappingFromProc converts a /proc/PID/maps entry.
func MappingFromProc(m proc.Mapping) Mapping {
	return Mapping{
		Path: m.Path, Start: m.Start, End: m.End, Offset: m.Offset,
		Dev: unix.Mkdev(m.Dev.Major, m.Dev.Minor), Inode: m.Inode,
	}
}

// Process is a handle on a live process's view of files.
//
// [Open] pins the process's root directory with an O_PATH file descriptor,
// so files can still be opened through it after the process exits. Tested
// on Linux 6.18 (TestPivot, TestBwrapFlatpak, TestPodman*): after the
// target is killed, files on the root mount itself stay reachable (a
// pivot_root bind mount; a podman kernel-overlay root, rootful or
// rootless, even after podman removed the container and its storage,
// because the fd keeps the detached overlay alive). A rootful
// fuse-overlayfs root stops answering once its daemon exits (ENOENT).
// Files on other mounts of the container, such as a Flatpak /app bind
// mount over a tmpfs root, become unreachable as soon as the mount
// namespace dies: the kernel detaches every mount of a dead namespace, so
// the pinned root then shows the empty mount point. Routes recorded at Open
// (storage layers, Flatpak paths) still work while their host files exist.
type Process struct {
	pid int

	mu      sync.Mutex
	closed  bool
	root    *os.File // pinned root directory (O_PATH), nil if it could not be opened
	rootVia string   // "root" or "task-root"
	rootErr error    // why root is nil

	// creds are the process's credentials at Open, for files reached
	// through it once it is gone; startTime tells it from a later
	// process with the same pid (see creds.go).
	creds     unix.Creds
	credsErr  error
	startTime uint64
	// credsReads counts the reads of the credentials from /proc (for
	// tests).
	credsReads atomic.Int64

	snap *snapshot
}

// Open pins pid's root directory (O_PATH fd of /proc/PID/root, falling back
// to /proc/PID/task/TID/root for each thread when the main thread has
// exited) and records what later lookups need: the mount table, conmon and
// fuse-overlayfs arguments, podman storage and /.flatpak-info. A root that
// cannot be opened (host root gets EACCES on rootless fuse-overlayfs
// containers) is not an error: other routes may still work. Open fails only
// when the process does not exist.
func Open(pid int) (*Process, error) {
	if pid <= 0 {
		return nil, fmt.Errorf("open process %d: invalid pid", pid)
	}
	if _, err := os.Stat("/proc/" + strconv.Itoa(pid)); err != nil {
		return nil, fmt.Errorf("open process %d: %w", pid, err)
	}
	p := &Process{pid: pid}
	p.root, p.rootVia, p.rootErr = openRoot(pid)
	p.snap = takeSnapshot(pid, p)
	return p, nil
}

func openRoot(pid int) (*os.File, string, error) {
	f, err := unix.OpenPathDir(fmt.Sprintf("/proc/%d/root", pid))
	if err == nil {
		return f, "root", nil
	}
	errs := []string{err.Error()}
	tids, terr := proc.Tasks(pid)
	if terr != nil {
		errs = append(errs, terr.Error())
	}
	for _, tid := range tids {
		if tid == pid {
			continue
		}
		f, err := unix.OpenPathDir(fmt.Sprintf("/proc/%d/task/%d/root", pid, tid))
		if err == nil {
			return f, "task-root", nil
		}
		errs = append(errs, err.Error())
	}
	return nil, "", fmt.Errorf("pin root of pid %d: %s", pid, strings.Join(errs, "; "))
}

// PID returns the host pid the Process was opened for.
func (p *Process) PID() int { return p.pid }

// Close releases the pinned root. It is idempotent.
func (p *Process) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil
	}
	p.closed = true
	if p.root != nil {
		err := p.root.Close()
		p.root = nil
		return err
	}
	return nil
}

// pinnedRoot returns the root fd, or an error if there is none.
func (p *Process) pinnedRoot() (*os.File, string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, "", fmt.Errorf("process %d: %w", p.pid, ErrClosed)
	}
	if p.root == nil {
		return nil, "", p.rootErr
	}
	return p.root, p.rootVia, nil
}

// OpenInRoot opens an absolute path as the process sees it, resolved inside
// its pinned root with openat2(RESOLVE_IN_ROOT|RESOLVE_NO_MAGICLINKS):
// symbolic links and ".." cannot leave the root, and /proc magic links are
// refused. Only regular files and directories are opened, so a FIFO or a
// device node planted in a container cannot block or trigger a driver. The
// open is made with the process's credentials (see [Process.Creds]). It
// has the signature of symbol.Opener.
func (p *Process) OpenInRoot(name string) (*os.File, error) {
	f, _, err := p.asProcess(func() (*os.File, string, error) { return p.openInRoot(name) })
	return f, err
}

func (p *Process) openInRoot(name string) (*os.File, string, error) {
	if !path.IsAbs(name) {
		return nil, "", fmt.Errorf("open %q in root of pid %d: path is not absolute", name, p.pid)
	}
	root, via, err := p.pinnedRoot()
	if err != nil {
		return nil, "", err
	}
	display := fmt.Sprintf("/proc/%d/root%s", p.pid, name)
	f, err := openSafe(root, name, unix.RESOLVE_IN_ROOT|unix.RESOLVE_NO_MAGICLINKS, display)
	return f, via, err
}

// openSafe opens rel beneath dir with the given resolve flags: first as
// O_PATH without following a final symlink further than resolve allows,
// then, if it is a regular file or directory, reopened for reading through
// /proc/self/fd.
func openSafe(dir *os.File, rel string, resolve uint64, display string) (*os.File, error) {
	pf, err := unix.Openat2(dir, rel, unix.O_PATH, resolve, display)
	if err != nil {
		return nil, err
	}
	defer pf.Close()
	st, err := unix.Fstat(pf)
	if err != nil {
		return nil, err
	}
	if t := st.Mode & unix.S_IFMT; t != unix.S_IFREG && t != unix.S_IFDIR {
		return nil, &os.PathError{Op: "open", Path: display, Err: fmt.Errorf("not a regular file (mode %#o)", st.Mode)}
	}
	f, err := unix.Reopen(pf, unix.O_RDONLY, display)
	if err != nil {
		return nil, err
	}
	// Guard against the file having been swapped between the two opens.
	st2, err := unix.Fstat(f)
	if err != nil || st2.Dev != st.Dev || st2.Ino != st.Ino {
		f.Close()
		return nil, &os.PathError{Op: "open", Path: display, Err: errors.New("file changed while opening")}
	}
	return f, nil
}

// openBeneath opens the host directory base, then rel inside it as if base
// were the root directory.
func openBeneath(base, rel string, extra uint64) (*os.File, error) {
	d, err := unix.OpenPathDir(base)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	return openSafe(d, rel, unix.RESOLVE_IN_ROOT|unix.RESOLVE_NO_MAGICLINKS|extra, path.Join(base, rel))
}

// Ways OpenMapped found a file.
const (
	ViaMapFiles     = "map_files"
	ViaRoot         = "root"
	ViaTaskRoot     = "task-root"
	ViaStorageLayer = "storage-layer"
	ViaOverlayLower = "overlay-lower"
	ViaFlatpak      = "flatpak"
	ViaMountinfo    = "mountinfo"
)

// route is one way of finding a mapped file. strict routes show the file as
// the process sees it: their device number must match too. Host-side routes
// read an overlay layer or a bind-mount source, whose st_dev is the
// underlying file system's, not the overlay's that maps reports; for them an
// inode match is accepted (overlay keeps the lower inode number when all
// layers share a file system and xino is off).
type route struct {
	via    string
	strict bool
	open   func(m Mapping, p string) (*os.File, string, error) // returns the via label it used
}

// Every route but map_files opens with the process's credentials, and the
// storage layers with those of the storage's owner (see creds.go).
func (p *Process) routes() []route {
	creds := p.credsOnce()
	return []route{
		{ViaMapFiles, true, p.openMapFiles},
		{ViaRoot, true, asProcessRoute(creds, func(_ Mapping, name string) (*os.File, string, error) { return p.openInRoot(name) })},
		{ViaStorageLayer, false, p.openStorageLayer},
		{ViaOverlayLower, false, asProcessRoute(creds, p.openOverlayLower)},
		{ViaFlatpak, false, asProcessRoute(creds, p.openFlatpak)},
		{ViaMountinfo, false, asProcessRoute(creds, p.openMountinfo)},
	}
}

// asProcessRoute wraps a route's open to run with the credentials creds
// gives: the process's, read once for all the routes of one open.
func asProcessRoute(creds func() (unix.Creds, error), open func(Mapping, string) (*os.File, string, error)) func(Mapping, string) (*os.File, string, error) {
	return func(m Mapping, name string) (*os.File, string, error) {
		return asCredsOf(creds, func() (*os.File, string, error) { return open(m, name) })
	}
}

// OpenMapped returns the very file a mapping maps. It tries, in order:
// /proc/PID/map_files/<start>-<end> ("map_files"); the path inside the
// pinned root ("root", or "task-root" when only a thread's root could be
// pinned); podman storage layers found through conmon's command line, the
// libpod cgroup and containers.json ("storage-layer"); the upper and lower
// directories of an overlay or fuse-overlayfs root ("overlay-lower"); the
// app-path and runtime-path of /.flatpak-info ("flatpak"); and a mountinfo
// translation to a host mount of the same device ("mountinfo").
//
// Every candidate is verified: against m.BuildID when set, else against
// m.Inode (and m.Dev for map_files and root). When m has neither, only the
// process's own view (map_files, root) is accepted: a host-side file cannot
// be told apart from a different one at the same place. A rejected
// candidate is closed. The error lists every attempt and why it failed.
func (p *Process) OpenMapped(m Mapping) (f *os.File, via string, err error) {
	return p.openMapped(m, nil)
}

// OpenMapFile returns the file a mapping maps as [Process.OpenMapped]
// does, through /proc/PID/map_files only: all that reaches a file deleted
// since it was mapped, while the process runs (no path names it any more,
// and the other routes would each be tried, in vain, for every mapping
// of it).
func (p *Process) OpenMapFile(m Mapping) (f *os.File, via string, err error) {
	return p.openMapped(m, map[string]bool{ViaMapFiles: true})
}

// openMapped tries the routes whose via is in only (all if only is nil).
func (p *Process) openMapped(m Mapping, only map[string]bool) (*os.File, string, error) {
	if _, _, err := p.pinnedRoot(); errors.Is(err, ErrClosed) {
		return nil, "", err
	}
	name := strings.TrimSuffix(m.Path, " (deleted)")
	var fails []string
	for _, r := range p.routes() {
		if only != nil && !only[r.via] {
			continue
		}
		f, via, err := r.open(m, name)
		if via == "" {
			via = r.via
		}
		if err != nil {
			fails = append(fails, via+": "+err.Error())
			continue
		}
		if err := verify(f, m, r.strict); err != nil {
			f.Close()
			fails = append(fails, via+": "+f.Name()+": rejected: "+err.Error())
			continue
		}
		return f, via, nil
	}
	return nil, "", fmt.Errorf("open mapping %s of pid %d: %s", m.Path, p.pid, strings.Join(fails, "; "))
}

// verify checks that f is the file m maps.
func verify(f *os.File, m Mapping, strict bool) error {
	if len(m.BuildID) > 0 {
		id, err := symbol.ReadBuildID(f)
		if err != nil {
			return fmt.Errorf("reading build-id: %v", err)
		}
		if !bytes.Equal(id, m.BuildID) {
			return fmt.Errorf("build-id %x, want %x", id, m.BuildID)
		}
		return nil
	}
	if m.Inode == 0 {
		if strict {
			return nil
		}
		return errors.New("mapping has neither build-id nor inode to verify a host-side file against")
	}
	st, err := unix.Fstat(f)
	if err != nil {
		return err
	}
	if st.Ino != m.Inode {
		return fmt.Errorf("inode %d, want %d", st.Ino, m.Inode)
	}
	if strict && m.Dev != 0 && st.Dev != m.Dev {
		return fmt.Errorf("device %d:%d, want %d:%d", unix.Major(st.Dev), unix.Minor(st.Dev), unix.Major(m.Dev), unix.Minor(m.Dev))
	}
	return nil
}

func (p *Process) openMapFiles(m Mapping, _ string) (*os.File, string, error) {
	if m.Start == 0 && m.End == 0 {
		return nil, "", errors.New("no address range")
	}
	f, err := os.Open(fmt.Sprintf("/proc/%d/map_files/%x-%x", p.pid, m.Start, m.End))
	return f, "", err
}

func (p *Process) openStorageLayer(_ Mapping, name string) (*os.File, string, error) {
	st, err := p.snap.podmanStorage()
	if err != nil {
		return nil, "", err
	}
	var f *os.File
	err = p.snap.asStorageOwner(func() (err error) {
		f, err = openInLayers(st.Dirs, name)
		return err
	})
	return f, "", err
}

func (p *Process) openOverlayLower(_ Mapping, name string) (*os.File, string, error) {
	mnt, rel, ok := coveringMount(p.snap.mounts, name)
	if !ok {
		return nil, "", fmt.Errorf("no mount covers %s (mountinfo: %v)", name, p.snap.mountsErr)
	}
	var o overlayDirs
	ok = false
	switch {
	case mnt.FSType == "overlay":
		o, ok = overlayFromMount(mnt)
	case mnt.FSType == "fuse.fuse-overlayfs":
		o, ok = p.snap.fuseOverlay[mnt.Dev]
	}
	if !ok {
		return nil, "", fmt.Errorf("%s is on %s at %s, not an overlay with known layers", name, mnt.FSType, mnt.MountPoint)
	}
	f, err := openInLayers(o.layers(), path.Join(mnt.Root, rel))
	return f, "", err
}

func (p *Process) openFlatpak(_ Mapping, name string) (*os.File, string, error) {
	fi := p.snap.flatpak
	if fi == nil {
		return nil, "", fmt.Errorf("no /.flatpak-info (%v)", p.snap.flatpakErr)
	}
	for _, d := range []struct{ prefix, dir string }{{"/app", fi.AppPath}, {"/usr", fi.RuntimePath}} {
		if rel, ok := cutDir(name, d.prefix); ok && d.dir != "" {
			f, err := openBeneath(d.dir, rel, 0)
			return f, "", err
		}
	}
	return nil, "", fmt.Errorf("%s is not under /app or /usr", name)
}

func (p *Process) openMountinfo(_ Mapping, name string) (*os.File, string, error) {
	name = path.Clean("/" + name)
	mnt, rel, ok := coveringMount(p.snap.mounts, name)
	if !ok {
		return nil, "", fmt.Errorf("no mount covers %s (mountinfo: %v)", name, p.snap.mountsErr)
	}
	host, err := proc.ReadMountInfo(proc.Self)
	if err != nil {
		return nil, "", err
	}
	// Find the host directory that is the covering mount's root, and
	// resolve rel inside it as if it were the root: symbolic links and
	// ".." in the container's tree then cannot reach host files above it.
	var best *proc.Mount
	var bestRel string
	for i := range host {
		h := &host[i]
		if h.Dev != mnt.Dev {
			continue
		}
		r, ok := cutDir(mnt.Root, h.Root)
		if !ok {
			continue
		}
		if best == nil || len(h.Root) > len(best.Root) {
			best, bestRel = h, r
		}
	}
	if best == nil {
		return nil, "", fmt.Errorf("no host mount of device %s holds %s", mnt.Dev, mnt.Root)
	}
	f, err := openBeneath(path.Join(best.MountPoint, bestRel), rel, unix.RESOLVE_NO_XDEV)
	return f, "", err
}

// cutDir returns p relative to dir ("/" for dir itself) if p is dir or
// below it.
func cutDir(p, dir string) (string, bool) {
	if dir == "/" || dir == "" {
		return p, strings.HasPrefix(p, "/")
	}
	if p == dir {
		return "/", true
	}
	if rest, ok := strings.CutPrefix(p, dir); ok && strings.HasPrefix(rest, "/") {
		return rest, true
	}
	return "", false
}

// coveringMount returns the mount whose mount point is the longest prefix
// of name (the last one listed if several are stacked) and name relative
// to it.
func coveringMount(mounts []proc.Mount, name string) (proc.Mount, string, bool) {
	best := -1
	var bestRel string
	for i, m := range mounts {
		rel, ok := cutDir(name, m.MountPoint)
		if !ok {
			continue
		}
		if best < 0 || len(m.MountPoint) >= len(mounts[best].MountPoint) {
			best, bestRel = i, rel
		}
	}
	if best < 0 {
		return proc.Mount{}, "", false
	}
	return mounts[best], bestRel, true
}

// OpenFile opens a file that is not mapped, such as /run/.containerenv
// or a JIT's /tmp/perf-PID.map, as the process sees it: inside its pinned
// root (see [Process.OpenInRoot]), else, where the host may not look
// through that root (rootless fuse-overlayfs), from the container's own
// storage layers, overlay directories, Flatpak paths or a host mount of
// the same device as the covering mount. With no identity to check, it
// never falls back to the host path itself. It returns how it got there.
func (p *Process) OpenFile(name string) (f *os.File, via string, err error) {
	if !path.IsAbs(name) {
		return nil, "", fmt.Errorf("open %q of pid %d: path is not absolute", name, p.pid)
	}
	var fails []string
	for _, r := range p.routes() {
		if r.via == ViaMapFiles {
			continue
		}
		f, via, err := r.open(Mapping{}, name)
		if via == "" {
			via = r.via
		}
		if err == nil {
			if st, serr := f.Stat(); serr == nil && st.Mode().IsRegular() {
				return f, via, nil
			}
			f.Close()
			err = errors.New("not a regular file")
		}
		fails = append(fails, via+": "+err.Error())
	}
	return nil, "", fmt.Errorf("open %s of pid %d: %s", name, p.pid, strings.Join(fails, "; "))
}
