package record

import (
	"encoding/hex"
	"slices"
	"strconv"
	"strings"
	"time"

	"nsprof/capture"
	"nsprof/container"
	"nsprof/perf"
	"nsprof/proc"
)

// tracker turns perf's process lifecycle records and /proc into PROCESS,
// MAP, FORK and EXIT frames, embedded mountinfo files and capture.ProcessFile
// lines, and keeps the pid-namespace map.
//
// Records come from per-CPU rings and are not in time order across CPUs: a
// new process's first sample or MMAP can arrive before its FORK or exec
// COMM. So a pid seen only in samples or mappings is described from /proc
// at the next tick (pending), unless a FORK or COMM described it first.
type tracker struct {
	w       *capture.Writer
	fs      proc.FS
	procs   map[int]*procState
	pending map[int]int64
	// parentOf holds children forked by a process not yet described:
	// the parent's own FORK may wait in another CPU's ring. They are
	// described from the parent (name and mappings) once it is, or from
	// /proc at the next tick.
	parentOf map[int]int
	pm       *pidMap
	hostNS   uint64
	// hostMnt is the recorder's mount namespace (0 if unknown).
	hostMnt uint64
	// cgroupLabel, when recording a container's cgroup (record
	// --container), is its label: every process recorded is in it, and
	// one /proc could not label (gone) gets it.
	cgroupLabel *capture.ContainerInfo
	// byNS holds, by namespaces, a process read from /proc in a
	// container, whose label a process gone in the same namespaces
	// before /proc was read gets (see labelOfNS).
	byNS map[taskNS]int
	// seen counts processes described; withSamples are the pids with
	// samples.
	seen        int
	withSamples map[int]struct{}
	// sampledGone counts the pids with samples forgotten since (see
	// forget).
	sampledGone int
	clones      clonePairs
	// exits are the processes whose exit was read, oldest first, whose
	// mappings and then state are let go of after a grace
	// (forgetExited); the first mapsGone have let go of their mappings.
	exits    []exitedProc
	mapsGone int
	// lingerers are the processes kept past their leader's EXIT
	// (procState.lingering), looked at in /proc every exitGrace
	// (checkLingerers) in case their last thread's EXIT record is
	// never read; lingerChecked is when they were last.
	lingerers     []lingerer
	lingerChecked time.Time
	// exitsInferred counts the processes ended that way.
	exitsInferred int
	// nsLabelled counts the processes gone before /proc told their
	// container, labelled by their namespaces (see labelByNS).
	nsLabelled int
	// gone holds, of the processes forgotten (forget) that lived in a
	// PID namespace other than the recorder's, what records read late
	// still ask of them: the pid each knew itself by (the bundle's JIT
	// maps) and its namespace (a --memprof ring drained late), 16 bytes
	// where the whole state was a kilobyte. A process given the pid again
	// replaces it.
	gone map[int]goneProc
	// sym, when set, opens mapped files as they appear, for the symbol
	// bundle written at the end.
	sym *symbolizer
	// identify, when set, labels a process with its container (and may
	// write what describes the container).
	identify func(pid int, now int64) *capture.ContainerInfo
	// redact, when set, cuts the command lines the capture must not
	// keep before they are written.
	redact *redactor
	// mounts reads the processes' mountinfo.
	mounts mountTables
	err    error
}

// procState is what the tracker knows of a process.
type procState struct {
	described bool
	// private says its command line was redacted (another user's
	// process): the capture keeps no more of what it does than its
	// program's name, so no paths of its open files either.
	private bool
	name    string
	// info is the process-table line written for it, which a split
	// recording writes again in each capture (see describeLive), with
	// the key of its mountinfo (see mountTables).
	info   capture.ProcessInfo
	mounts mountKey
	maps   []capture.Map
	have   map[mapKey]string // build-id written for the mapping
	pidns  uint64
	// nspid is the pid the process knows itself by (innermost NSpid).
	nspid int
	// exitAt is the time of the last EXIT record read of it, 0 while
	// none was: a FORK of the pid later than that is a new process's
	// (see tracker.reborn).
	exitAt int64
	// lingering says the EXIT record at exitAt was its leader thread's
	// and other threads ran on (see forgetExited): it exits with the
	// last of them (hasExited).
	lingering bool
	// goneAtCut says /proc had no entry for the process at the last cut
	// of a split recording though no EXIT record was read: it exited
	// while the cut was made, its last records (its EXIT among them)
	// waiting in the rings for the capture begun then, or its EXIT
	// record was lost. It is forgotten at the next cut (see
	// tracker.nextCapture).
	goneAtCut bool
	// mapsRetried says /proc was read again for a process described
	// without mappings and then sampled.
	mapsRetried bool
	// deferred says a scan found no command line once already.
	deferred bool
	// unmapped says a scan described the process after it had exited,
	// without its mappings: a FORK read later still gives it its
	// parent's (see fork).
	unmapped bool
	// early is what a look at the process mid-exec found, and earlyMaps
	// its mappings then: what describes it if it is gone by the next
	// look (a short-lived process would otherwise stay nameless).
	early     *procInfo
	earlyMaps []proc.Mapping
	// root is the process's root directory as the recorder sees it
	// (/proc/PID/root), when it was read: /proc/PID/maps shows the paths
	// of files inside it with it as a prefix.
	root string
	// ns is what the newest NAMESPACES record of its leader thread
	// said: zero without one. nsLabel says its container label came
	// from it (see labelByNS): the process was gone before /proc told.
	ns      taskNS
	nsLabel bool
	// noted is the key of tracker.byNS this process was noted under.
	noted taskNS
	// execAt is the time of the newest exec seen. Rings are read CPU by
	// CPU, so an exec and its mappings may be read after a later exec's
	// when the process moved between CPUs: `unshare --root` execs the
	// target a millisecond after its own exec.
	execAt int64
}

func newTracker(w *capture.Writer, fs proc.FS) *tracker {
	hostNS, _ := fs.NamespaceID(proc.Self, "pid")
	hostMnt, _ := fs.NamespaceID(proc.Self, "mnt")
	return &tracker{w: w, fs: fs, procs: make(map[int]*procState), pending: make(map[int]int64), parentOf: make(map[int]int), pm: newPIDMap(hostNS), hostNS: hostNS,
		hostMnt: hostMnt, withSamples: make(map[int]struct{}), mounts: mountTables{fs: fs}}
}

func (t *tracker) write(f capture.Frame) {
	if t.err == nil {
		t.err = t.w.WriteFrame(f)
	}
}

// get returns the state of pid, creating an undescribed one.
func (t *tracker) get(pid int) *procState {
	ps := t.procs[pid]
	if ps == nil {
		ps = &procState{}
		t.procs[pid] = ps
		delete(t.gone, pid)
	}
	return ps
}

// goneProc is what the tracker keeps of a process forgotten in a PID
// namespace of its own (tracker.gone).
type goneProc struct {
	nspid int
	pidns uint64
}

// scan describes a process from /proc: identity, PROCESS frame, mountinfo,
// executable mappings and, inside a PID namespace, its threads' ids. It is
// used for processes that existed before the recording and for pids no
// lifecycle record described.
func (t *tracker) scan(pid int, now int64) {
	ps := t.get(pid)
	if ps.described {
		return
	}
	var info procInfo
	if e := ps.early; e != nil && e.kthread && e.Time == now {
		// Glanced at in this same pass: a kernel thread execs nothing,
		// its status need not be read again.
		info = *e
		if info.inspectRest(t.fs); info.gone {
			info = *e // exited since: described as glance saw it
		}
	} else {
		info = inspect(t.fs, pid, now)
	}
	// An exiting process (or a zombie) shows no command line and no
	// mappings either, but for good: describe it now, as glance saw it.
	exiting := info.midExec() && !info.kthread && t.exiting(pid)
	if info.midExec() && !info.kthread && !exiting && !ps.deferred && pid != 2 && info.PPID != 2 {
		// A user process without a command line is in the middle of
		// an exec (its new arguments are not set up yet): look again
		// at the next tick. Kernel threads (kthreadd's children) have
		// none for good.
		ps.deferred = true
		ps.early = &info
		if maps, err := t.readMaps(pid); err == nil {
			ps.earlyMaps = maps
		}
		if _, ok := t.pending[pid]; !ok {
			t.pending[pid] = now
		}
		return
	}
	gone := info.Err != "" && info.Comm == ""
	if (gone || exiting) && ps.early != nil {
		info = *ps.early // gone or exiting since: describe it as it was seen
	}
	ps.early = nil
	var maps []proc.Mapping // a kernel thread has none
	if !info.kthread {
		maps = t.currentMaps(pid, ps, exiting)
	}
	ps.earlyMaps = nil
	if (gone || exiting) && !slices.ContainsFunc(maps, isExec) {
		// Past exit_mm before anything read its mappings: its samples
		// cannot be named, and the capture says why.
		info.Err = strings.TrimPrefix(info.Err+"; "+errExitedUnmapped, "; ")
		ps.unmapped = true
	}
	t.describe(pid, ps, info, now)
	t.writeProcMaps(pid, ps, maps, now)
	t.threads(pid, ps, now)
	t.adopt(pid, now)
}

// errExitedUnmapped is in the Err of a [capture.ProcessInfo] for a process that
// had exited, or was exiting with its mappings gone from /proc, before the
// recorder read them.
const errExitedUnmapped = "maps: the process exited before they were read"

// glance reads the names and mappings of pids, quickly, before they are
// scanned one by one: describing a process (its namespaces, container,
// files) takes long enough that, on a loaded machine, scanning every
// process at the start of a system-wide recording took half a second,
// and processes listed at its start had exited by the time their turn
// came, leaving them nameless. What glance read describes those.
func (t *tracker) glance(pids []int, now int64) {
	for _, pid := range pids {
		ps := t.get(pid)
		if ps.described {
			continue
		}
		st, err := t.fs.ReadStatus(pid)
		if err != nil {
			continue
		}
		info := procInfo{ProcessInfo: capture.ProcessInfo{Kind: capture.KindProcess, Time: now, PID: pid, PPID: st.PPid, NSpid: st.NStgid, Comm: st.Name, UID: st.Uid.Real}, uidKnown: true, kthread: st.Kthread}
		if info.kthread {
			ps.early = &info // its name is all there is to glance at
			continue
		}
		info.Cmdline, _ = t.fs.ReadCmdline(pid)
		if l, err := t.fs.ReadLink(pid, "root"); err == nil {
			info.Root = l.Target
		}
		ps.early = &info
		ps.earlyMaps, _ = t.readMaps(pid)
	}
}

// addProcMap writes mapping m of pid, as /proc shows it, and hands it to
// the symbolizer.
func (t *tracker) addProcMap(pid int, ps *procState, m proc.Mapping, now int64) {
	cm := capture.Map{
		FrameHeader: capture.FrameHeader{CPU: -1, PID: int32(pid), Time: now},
		Start:       m.Start, End: m.End, Offset: m.Offset, Inode: m.Inode, Filename: procMapName(m, ps.root),
	}
	t.symMapped(pid, &cm, mkdev(m.Dev.Major, m.Dev.Minor), nil)
	t.addMap(pid, ps, cm)
}

// procMapName is the file name a MAP frame gives mapping m of a process
// whose root directory is root: its path as the process sees it, marked
// " (deleted)" as /proc marks it. /proc shows paths from the reader's
// root, so a file of a process chrooted to /srv/jail reads
// /srv/jail/bin/sh there, where the process, perf's MMAP records and its
// debug links say /bin/sh. Files outside the root (mapped before a
// chroot) keep the path /proc gives.
func procMapName(m proc.Mapping, root string) string {
	p := m.Path
	if root != "" && root != "/" && strings.HasPrefix(p, root+"/") {
		p = p[len(root):]
	}
	if m.Deleted {
		return p + " (deleted)"
	}
	return p
}

// scanMaps writes pid's executable mappings as /proc shows them.
func (t *tracker) scanMaps(pid int, ps *procState, now int64) {
	t.writeProcMaps(pid, ps, t.currentMaps(pid, ps, false), now)
}

// currentMaps returns pid's mappings as /proc shows them, or as they were
// read earlier when the process is gone, or exiting and past the point
// where /proc lists its mappings.
func (t *tracker) currentMaps(pid int, ps *procState, exiting bool) []proc.Mapping {
	maps, err := t.readMaps(pid)
	if err != nil || exiting && len(maps) == 0 {
		maps = ps.earlyMaps
	}
	ps.earlyMaps = nil
	return maps
}

// writeProcMaps writes the executable mappings of maps, read from /proc.
func (t *tracker) writeProcMaps(pid int, ps *procState, maps []proc.Mapping, now int64) {
	for _, m := range maps {
		if isExec(m) {
			t.addProcMap(pid, ps, m, now)
		}
	}
}

func isExec(m proc.Mapping) bool { return m.Perms&proc.PermExec != 0 }

// pfExiting is the PF_EXITING task flag of /proc/PID/stat: the task has
// begun to exit.
const pfExiting = 0x4

// exiting reports whether process pid has begun to exit, or is a zombie.
// Past exit_mm its /proc files show its name but no command line and no
// mappings, as in the middle of an exec; unlike an exec, that lasts.
func (t *tracker) exiting(pid int) bool {
	st, err := t.fs.ReadStat(pid)
	return err == nil && (st.Flags&pfExiting != 0 || st.State == 'Z' || st.State == 'X')
}

// readMaps reads pid's mappings, through another of its threads when the
// thread-group leader has exited and left /proc/PID/maps empty while
// the process lives on (a Go program tearing down, for one).
func (t *tracker) readMaps(pid int) ([]proc.Mapping, error) {
	maps, err := t.fs.ReadMaps(pid)
	if err != nil || len(maps) > 0 {
		return maps, err
	}
	tids, _ := t.fs.Tasks(pid)
	for _, tid := range tids {
		if tid == pid {
			continue
		}
		if m, err := t.fs.ReadTaskMaps(pid, tid); err == nil && len(m) > 0 {
			return m, nil
		}
	}
	return maps, nil
}

// adopt describes the children waiting for parent, now described.
func (t *tracker) adopt(parent int, now int64) {
	for child, p := range t.parentOf {
		if p == parent {
			delete(t.parentOf, child)
			t.fork(parent, child, now)
		}
	}
}

// describe writes what identifies a process: its capture.ProcessFile line,
// PROCESS frame and mountinfo.
func (t *tracker) describe(pid int, ps *procState, info procInfo, now int64) {
	if !ps.described {
		t.seen++
	}
	ps.described = true
	delete(t.pending, pid)
	t.redact.apply(&info.ProcessInfo, info.uidKnown)
	ps.private = info.CmdlineRedacted
	if name := info.cmdline(); name != "" {
		ps.name = name
	}
	ps.root = info.Root
	if info.PidNS != 0 {
		ps.pidns = info.PidNS
	}
	if n := len(info.NSpid); n > 0 {
		ps.nspid = info.NSpid[n-1]
	}
	if t.identify != nil && info.Err == "" {
		if onHost(&info) {
			// Opened only if its files need it (symbolizer.mapped).
			info.Container = &capture.ContainerInfo{Kind: container.KindHost}
		} else {
			info.Container = t.identify(pid, now)
		}
		t.noteNS(pid, ps, &info.ProcessInfo)
	}
	if t.identify != nil && info.Container == nil && !t.labelByNS(ps, &info.ProcessInfo) {
		// Recording a container's cgroup, every process is its: one
		// gone before /proc was read, or before its view could be
		// opened once it was (podman exec's command, for a few ms).
		info.Container = t.cgroupLabel
	}
	t.pm.addProcess(pid, info.PPID, ps.pidns)
	ps.info, ps.mounts = info.ProcessInfo, info.mountKey()
	if t.err == nil {
		t.err = t.w.AddProcessInfo(info.ProcessInfo)
	}
	t.write(&capture.Process{FrameHeader: capture.FrameHeader{CPU: -1, PID: int32(pid), Time: now}, Cmdline: ps.name})
	if info.gone {
		return
	}
	if mi, err := t.mounts.read(pid, info.mountKey()); err == nil && t.err == nil {
		t.err = t.w.AddFileBytes(capture.FrameHeader{CPU: -1, PID: int32(pid), Time: now}, "/proc/"+strconv.Itoa(pid)+"/mountinfo", mi)
	}
}

// private reports whether the capture must keep no details of process
// pid beyond its program's name, as --redact-cmdlines says: its command
// line was cut, or it is not described yet while redaction is on.
func (t *tracker) private(pid int) bool {
	if t.redact == nil || t.redact.mode == RedactNone {
		return false
	}
	ps := t.procs[pid]
	return ps == nil || !ps.described || ps.private
}

// orphanGrace is how long a child whose parent is undescribed waits for
// the parent's records before it is described from /proc.
const orphanGrace = int64(200 * time.Millisecond)

// flushPending describes the pids seen only in samples or mappings, and
// children whose parent is still undescribed after orphanGrace, from
// /proc. At the end (final) none waits.
func (t *tracker) flushPending(final bool) {
	now := capture.Now()
	for pid, at := range t.pending {
		ppid, orphan := t.parentOf[pid]
		if orphan && !final && now-at < orphanGrace {
			continue
		}
		delete(t.parentOf, pid)
		if final {
			t.get(pid).deferred = true // no later tick to wait for
		}
		t.scan(pid, at)
		if ps := t.procs[pid]; orphan && ps != nil && ps.unmapped {
			// Gone before the grace was over (under load the rings
			// are read late): the parent's description, when it
			// comes, still gives it the parent's mappings (adopt,
			// fork).
			t.parentOf[pid] = ppid
		}
	}
}

// threads records the namespace ids of pid's threads when it lives in a
// PID namespace other than the recorder's.
func (t *tracker) threads(pid int, ps *procState, now int64) {
	if ps.pidns == 0 || ps.pidns == t.hostNS {
		return
	}
	tids, err := t.fs.ThreadNSpids(pid)
	if err != nil {
		return
	}
	for _, th := range tids {
		t.thread(pid, th.TID, ps, now)
	}
}

// thread records a new thread of pid, with its namespace ids when it is
// in a PID namespace of its own.
func (t *tracker) thread(pid, tid int, ps *procState, now int64) {
	ti := capture.ThreadInfo{Kind: capture.KindThread, Time: now, TID: tid, PID: pid}
	if ps.pidns == 0 || ps.pidns != t.hostNS {
		if st, err := t.fs.ReadTaskStatus(pid, tid); err == nil && len(st.NSpid) >= 2 {
			t.pm.addTask(tid, st.NSpid, ps.pidns)
			ti.NSpid = st.NSpid
		}
	}
	if t.err == nil {
		t.err = t.w.AddThreadInfo(ti)
	}
}

// mapKey identifies a mapping, so one seen both in /proc/PID/maps and in
// an MMAP2 record is written once.
type mapKey struct {
	start, end, off uint64
	name            string
}

func (t *tracker) addMap(pid int, ps *procState, m capture.Map) {
	k := mapKey{m.Start, m.End, m.Offset, m.Filename}
	if ps.have == nil {
		ps.have = make(map[mapKey]string)
	}
	if id, seen := ps.have[k]; seen && (id != "" || m.BuildID == "") {
		return // written already; again only to add a build-id
	}
	ps.have[k] = m.BuildID
	ps.maps = append(ps.maps, m)
	t.write(&m)
}

// symMapped hands an executable mapping to the symbolizer, which opens
// its file while the process lives, and gives m the build-id read from
// that file when it has none (the kernel's, buildID, is read only from
// PT_NOTE segments).
func (t *tracker) symMapped(pid int, m *capture.Map, dev uint64, buildID []byte) {
	if t.sym == nil {
		return
	}
	id := t.sym.mapped(pid, container.Mapping{
		Path: m.Filename, Start: m.Start, End: m.End, Offset: m.Offset,
		Dev: dev, Inode: m.Inode, BuildID: slices.Clone(buildID),
	})
	if m.BuildID == "" {
		m.BuildID = id
	}
}

// handle processes one perf record other than a sample.
func (t *tracker) handle(rec *perf.Record) {
	now := int64(rec.Time())
	switch rec.Type {
	case perf.RecordNamespaces:
		t.namespaces(&rec.Namespaces, now)
	case perf.RecordComm:
		c := &rec.Comm
		if c.PID != c.TID && t.err == nil {
			// A thread named itself (prctl PR_SET_NAME,
			// pthread_setname_np): reports list it under its
			// process by that name.
			t.err = t.w.AddThreadInfo(capture.ThreadInfo{Kind: capture.KindThread, Time: now, TID: int(c.TID), PID: int(c.PID), Comm: string(c.Comm)})
		}
		if c.PID != c.TID || !c.Exec {
			return
		}
		pid := int(c.PID)
		ps := t.get(pid)
		if now < ps.execAt {
			// An earlier exec, read late from another CPU's ring: its
			// image was replaced already, keep the newer one's state.
			return
		}
		ps.execAt = now
		// exec replaced the image: old mappings are gone, whether or
		// not the process was described. A launcher deferred at its own
		// exec (its command line was not set up yet) may exec again
		// within the tick, as `unshare --root` does after its chroot:
		// the symbolizer must then reopen its view in the new root.
		ps.maps, ps.have = ps.maps[:0], nil
		if t.sym != nil {
			t.sym.execed(pid, now)
		}
		info := inspect(t.fs, pid, now)
		if info.midExec() {
			// The COMM record comes early in exec, before the new
			// image's arguments are in place: read so soon, the
			// command line is empty. Describe the process at the
			// next tick, from /proc, as one seen only in samples.
			ps.described = false
			if info.Comm == "" {
				info.Comm = string(c.Comm)
			}
			ps.early = &info
			if _, ok := t.pending[pid]; !ok {
				t.pending[pid] = now
			}
			return
		}
		if info.Comm == "" {
			info.Comm = string(c.Comm)
		}
		t.describe(pid, ps, info, now)
		t.threads(pid, ps, now)
	case perf.RecordMmap, perf.RecordMmap2:
		m := &rec.Mmap
		pid := int(m.PID)
		ps := t.get(pid)
		if !ps.described {
			t.pending[pid] = now
		}
		cm := capture.Map{
			FrameHeader: capture.FrameHeader{CPU: int16(rec.CPU), PID: int32(pid), Time: now},
			Start:       m.Addr, End: m.Addr + m.Len, Offset: m.PgOff, Inode: m.Ino, Filename: string(m.Filename),
		}
		if id := m.BuildIDBytes(); len(id) > 0 {
			cm.BuildID = hex.EncodeToString(id)
		}
		if now < ps.execAt {
			// A mapping of the image before the last exec, read late:
			// part of the capture's history, but neither the process's
			// mappings now (which its children inherit) nor where to
			// look up its samples' addresses.
			t.write(&cm)
			return
		}
		t.symMapped(pid, &cm, mkdev(m.Maj, m.Min), m.BuildIDBytes())
		t.addMap(pid, ps, cm)
	case perf.RecordFork:
		k := &rec.Task
		t.write(&capture.Fork{FrameHeader: capture.FrameHeader{CPU: int16(rec.CPU), PID: int32(k.PTID), Time: now}, ChildPID: int32(k.TID)})
		host, nsid, paired := t.clones.fork(int(k.PTID), int(k.TID))
		if paired {
			t.nsTask(int(k.PPID), host, nsid, now)
		}
		if k.PID == k.PPID { // a new thread
			if ps := t.procs[int(k.PID)]; ps != nil && ps.described {
				t.thread(int(k.PID), int(k.TID), ps, now)
			} else if t.err == nil {
				t.err = t.w.AddThreadInfo(capture.ThreadInfo{Kind: capture.KindThread, Time: now, TID: int(k.TID), PID: int(k.PID)})
			}
			return
		}
		t.reborn(int(k.PID), now)
		t.fork(int(k.PPID), int(k.PID), now)
		if paired {
			t.childNSpid(host, nsid, now)
		}
	case perf.RecordExit:
		k := &rec.Task
		if k.PID != k.TID {
			t.clones.exited(int(k.TID))
			if t.err == nil {
				t.err = t.w.AddThreadInfo(capture.ThreadInfo{Kind: capture.KindThread, Time: now, TID: int(k.TID), PID: int(k.PID), Exited: true})
			}
			if ps := t.procs[int(k.PID)]; ps != nil && ps.lingering && !t.livesOn(int(k.PID), int(k.TID)) {
				t.endLingering(int(k.PID), ps, int16(rec.CPU), now)
			}
			return
		}
		t.clones.exited(int(k.TID))
		t.write(&capture.Exit{FrameHeader: capture.FrameHeader{CPU: int16(rec.CPU), PID: int32(k.PID), Time: now}})
		t.exited(int(k.PID), t.procs[int(k.PID)], now)
	}
}

// hasExited says the process's EXIT record was read and ended it (see
// lingering).
func (ps *procState) hasExited() bool { return ps.exitAt != 0 && !ps.lingering }

// endLingering ends lingering process pid with its last thread, at time
// at: a second EXIT frame says when (a timeline ends the process at its
// last).
func (t *tracker) endLingering(pid int, ps *procState, cpu int16, at int64) {
	t.write(&capture.Exit{FrameHeader: capture.FrameHeader{CPU: cpu, PID: int32(pid), Time: at}})
	t.exited(pid, ps, at)
}

// exited notes that process pid (its state ps, nil when none) exited at
// time now, to be forgotten after the graces.
func (t *tracker) exited(pid int, ps *procState, now int64) {
	if ps != nil {
		ps.exitAt, ps.lingering = now, false
		t.exits = append(t.exits, exitedProc{pid: pid, at: time.Now(), rec: now})
	}
	if t.sym != nil {
		t.sym.exited(pid, now)
	}
}

// livesOn reports whether process pid has a thread other than its leader
// and thread except in /proc: its leader's EXIT record did not end it.
func (t *tracker) livesOn(pid, except int) bool {
	tids, _ := t.fs.Tasks(pid)
	for _, tid := range tids {
		if tid != pid && tid != except {
			return true
		}
	}
	return false
}

// mapsGrace is how long after its exit was read a process's mappings are
// kept: a child's FORK, which gives the child its parent's mappings, may
// still be read from another CPU's ring.
const mapsGrace = 2 * time.Second

// exitGrace is how long after its exit was read the rest of what the
// tracker holds of a process is kept: a record of it read later still
// finds it described (rather than describing a pid gone from /proc
// again). Rings hold about a second of records; five times that.
const exitGrace = 5 * time.Second

// forgetExited lets go of the mappings of the processes whose exit was
// read mapsGrace before now or earlier, and of the processes whose exit
// was read exitGrace before: the capture holds what describes them, no
// child can inherit their mappings any more, and their records have all
// been read. Over a long recording of processes coming and going, their
// mappings were most of what each one left in memory, and the rest of
// its state (about 1 KB: its name, process-table line, root) made a
// 10-minute recording of a compile loop grow by 2 MB a minute. A pid
// used again after that is a new process, described as one (it was taken
// for the exited one, already described: no PROCESS frame of its own, its
// samples under the old name). An EXIT record of a process is its leader
// thread's: a process whose other threads still run when its mappings'
// grace ends is kept, mappings and all, until the last of them exits
// (perf, too, takes such an EXIT for the thread's alone); forgotten, it
// was described again from /proc at its next sample, and a child its
// threads forked meanwhile found no mappings to inherit.
func (t *tracker) forgetExited(now time.Time) {
	n := 0
	for n < len(t.exits) && now.Sub(t.exits[n].at) >= exitGrace {
		if ps := t.procs[t.exits[n].pid]; ps != nil && ps.hasExited() && ps.exitAt == t.exits[n].rec {
			t.forget(t.exits[n].pid)
		}
		n++
	}
	t.exits = append(t.exits[:0], t.exits[n:]...)
	t.mapsGone = max(t.mapsGone-n, 0)
	for t.mapsGone < len(t.exits) && now.Sub(t.exits[t.mapsGone].at) >= mapsGrace {
		e := t.exits[t.mapsGone]
		if ps := t.procs[e.pid]; ps != nil && ps.hasExited() && ps.exitAt == e.rec {
			if t.livesOn(e.pid, 0) {
				// Its leader thread exited, others run on (and
				// may fork): it is followed until the last one's
				// EXIT (handle).
				ps.lingering = true
				t.lingerers = append(t.lingerers, lingerer{pid: e.pid, rec: e.rec})
			} else {
				ps.maps, ps.have = nil, nil
			}
		}
		t.mapsGone++
	}
	if now.Sub(t.lingerChecked) >= exitGrace {
		t.lingerChecked = now
		t.checkLingerers(capture.Now())
	}
}

// lingerer is a process followed past its leader's EXIT record (rec).
type lingerer struct {
	pid int
	rec int64
	// goneAt is when a look found no thread of it left, 0 while one
	// ran at the last look.
	goneAt int64
}

// checkLingerers ends the lingering processes whose threads are all gone
// from /proc since the last look, at least exitGrace ago: by then the
// last one's EXIT record would have been read, had the rings not lost it.
// They end at that look's time (now then), the first known to be past
// their last thread's exit, with the second EXIT frame handle would have
// written, and are counted in exitsInferred. Without it such a process
// was held, mappings and all, until the recording ended, its timeline
// ending at its leader's exit.
func (t *tracker) checkLingerers(now int64) {
	kept := t.lingerers[:0]
	for _, l := range t.lingerers {
		ps := t.procs[l.pid]
		if ps == nil || !ps.lingering || ps.exitAt != l.rec {
			continue // ended by its last EXIT, or the pid is another's
		}
		switch {
		case t.livesOn(l.pid, 0):
			l.goneAt = 0
		case l.goneAt == 0:
			l.goneAt = now // its last EXIT may wait in a ring
		default:
			t.exitsInferred++
			t.endLingering(l.pid, ps, -1, l.goneAt)
			continue
		}
		kept = append(kept, l)
	}
	t.lingerers = kept
}

// reborn forgets the exited process of pid when a FORK at time now makes
// a new one with its pid, within the grace the exited one is kept for
// (pid_max is 32768 on many machines). Only a FORK tells: a process's
// EXIT record is its first thread's, and its other threads may run on.
func (t *tracker) reborn(pid int, now int64) {
	if ps := t.procs[pid]; ps != nil && ps.exitAt != 0 && now > ps.exitAt {
		t.forget(pid)
	}
}

// forget lets go of what the tracker holds of process pid, counting it
// in sampledGone when it had samples.
func (t *tracker) forget(pid int) {
	if ps := t.procs[pid]; ps != nil {
		t.unnoteNS(pid, ps)
	}
	if ps := t.procs[pid]; ps != nil && ps.pidns != 0 && ps.pidns != t.hostNS {
		if t.gone == nil {
			t.gone = make(map[int]goneProc)
		}
		t.gone[pid] = goneProc{nspid: ps.nspid, pidns: ps.pidns}
	}
	delete(t.procs, pid)
	delete(t.pending, pid)
	t.pm.forget(pid)
	if _, ok := t.withSamples[pid]; ok {
		delete(t.withSamples, pid)
		t.sampledGone++
	}
}

// fork describes a new process: it starts with its parent's name and
// mappings (perf reports no MMAP for inherited mappings), which are
// written as its own MAP frames.
func (t *tracker) fork(ppid, pid int, now int64) {
	ps := t.get(pid)
	parent := t.procs[ppid]
	if ps.described {
		if ps.unmapped && parent != nil && parent.described {
			t.inherit(parent, ppid, pid, ps, now)
		}
		return
	}
	if parent == nil || !parent.described {
		// Wait for the parent's FORK or /proc scan, likely in a ring
		// not read yet; a short-lived child is gone from /proc by the
		// time it would be scanned.
		t.parentOf[pid] = ppid
		if _, ok := t.pending[pid]; !ok {
			t.pending[pid] = now
		}
		return
	}
	info := inspect(t.fs, pid, now)
	inheritName(&info, parent)
	if info.PPID == 0 {
		info.PPID = ppid
	}
	if ps.pidns == 0 {
		ps.pidns = parent.pidns
	}
	t.describe(pid, ps, info, now)
	t.forkMaps(parent, ppid, pid, ps, now)
	t.threads(pid, ps, now)
	t.adopt(pid, now)
}

// inheritName gives a child that /proc could not name (it had exited, or
// exec'd and is named again at its exec) its parent's comm and command
// line: a forked process runs its parent's program, with its arguments,
// until it execs. The comm was the parent's whole command line, under
// which reports listed the child's samples before its exec, where perf
// lists them under the parent's comm.
func inheritName(info *procInfo, parent *procState) {
	if info.Comm != "" {
		return
	}
	info.Comm = parent.info.Comm
	if len(info.Cmdline) == 0 {
		info.Cmdline = slices.Clone(parent.info.Cmdline)
	}
	if info.Comm == "" {
		info.Comm = parent.name
	}
}

// forkMaps gives child pid its parent's mappings, written as its own MAP
// frames, before any it mapped itself since.
func (t *tracker) forkMaps(parent *procState, ppid, pid int, ps *procState, now int64) {
	for _, m := range parent.maps {
		m.PID, m.Time, m.CPU = int32(pid), now, -1
		t.addMap(pid, ps, m)
	}
	if t.sym != nil {
		t.sym.forked(ppid, pid, now)
	}
}

// inherit completes child pid, described from /proc after it had exited
// and so without mappings, from the FORK read since in another CPU's ring:
// under load the rings are read late, and a child's first mapping or
// sample can be read, and its pid scanned at a tick, before the record of
// the fork that made it. It gets its parent's mappings (its samples were
// otherwise all nameless), and its parent's name when /proc gave none.
func (t *tracker) inherit(parent *procState, ppid, pid int, ps *procState, now int64) {
	ps.unmapped = false
	if ps.pidns == 0 {
		ps.pidns = parent.pidns
	}
	// Described again: without the error saying its mappings are
	// unknown, with its parent's name if it had none.
	info := procInfo{ProcessInfo: ps.info, rootDev: ps.mounts.dev, rootInode: ps.mounts.rootInode}
	inheritName(&info, parent)
	if info.PPID == 0 {
		info.PPID = ppid
	}
	info.Err = strings.Trim(strings.ReplaceAll(info.Err, errExitedUnmapped, ""), "; ")
	t.describe(pid, ps, info, now)
	t.forkMaps(parent, ppid, pid, ps, now)
}

// sampled notes a sampled pid, to be described if no lifecycle record
// does it first.
func (t *tracker) sampled(pid int, now int64) {
	if pid <= 0 {
		return
	}
	if _, ok := t.withSamples[pid]; !ok {
		t.withSamples[pid] = struct{}{}
	}
	ps := t.procs[pid]
	if ps == nil || !ps.described {
		t.get(pid)
		if _, ok := t.pending[pid]; !ok {
			t.pending[pid] = now
		}
		return
	}
	// /proc showed no mappings when the process was described (it was
	// between fork and exec, or tearing down): look once more now that
	// it runs code.
	if len(ps.maps) == 0 && !ps.mapsRetried && !ps.hasExited() {
		ps.mapsRetried = true
		t.scanMaps(pid, ps, now)
	}
}

// cloneReturned notes the value a clone syscall returned in parent thread
// tid of process pid.
func (t *tracker) cloneReturned(pid, tid, ret int, now int64) {
	if ret <= 0 {
		return // the child's own return, or a failure
	}
	if host, nsid, ok := t.clones.returned(tid, ret); ok {
		t.nsTask(pid, host, nsid, now)
		t.childNSpid(host, nsid, now)
	}
}

// childNSpid gives process pid, created by a process in a PID namespace
// of its own and described without the pid it has there (gone before
// /proc was read), nsid, the clone's return value in its parent: its
// process-table line is written again with it. A process /proc described
// already has it.
func (t *tracker) childNSpid(pid, nsid int, now int64) {
	ps := t.procs[pid]
	if ps == nil || !ps.described || ps.nspid != 0 || pid == nsid {
		return
	}
	ps.nspid = nsid
	info := ps.info
	info.NSpid, info.Time = []int{pid, nsid}, now
	ps.info = info
	if t.err == nil {
		t.err = t.w.AddProcessInfo(info)
	}
}

// nsTask records that the task host, created by process ppid, has id nsid
// in ppid's PID namespace.
func (t *tracker) nsTask(ppid, host, nsid int, now int64) {
	ps := t.procs[ppid]
	if ps == nil || ps.pidns == 0 || ps.pidns == t.hostNS || host == nsid {
		return
	}
	t.pm.addTask(host, []int{host, nsid}, ps.pidns)
	if t.err == nil {
		t.err = t.w.AddThreadInfo(capture.ThreadInfo{Kind: capture.KindThread, Time: now, TID: host, PID: ppid, NSpid: []int{host, nsid}})
	}
}

// mkdev encodes a device number as the kernel's st_dev does (the glibc
// and golang.org/x/sys makedev layout).
func mkdev(major, minor uint32) uint64 {
	ma, mi := uint64(major), uint64(minor)
	return (ma&0xfffff000)<<32 | (ma&0xfff)<<8 | (mi&0xffffff00)<<12 | mi&0xff
}

// nsPID returns the pid process pid knows itself by, 0 if unknown.
func (t *tracker) nsPID(pid int) int {
	if ps := t.procs[pid]; ps != nil {
		return ps.nspid
	}
	return t.gone[pid].nspid
}

// pidNS returns the inode of process pid's PID namespace, 0 if unknown.
func (t *tracker) pidNS(pid int) uint64 {
	if ps := t.procs[pid]; ps != nil {
		return ps.pidns
	}
	return t.gone[pid].pidns
}
