package record

import (
	"nsprof/capture"
	"nsprof/container"
	"nsprof/perf"
)

// A process that exits before the recorder reads /proc (a shell's
// command that ran for a few milliseconds, read late from a ring) has no
// container label of its own: its /proc files are gone. Its namespaces
// are known still, from the NAMESPACES record the kernel writes when a
// task is created and when it enters or leaves a namespace (perf record
// --namespaces). Such a process gets the label of its parent when it is
// in its parent's namespaces, else that of a live process read from /proc
// in the same namespaces (a command `podman exec` ran: its parent is
// the runtime's, on the host). Over a container's loop of 10-20 ms
// commands, three quarters of its samples were labelled unknown without.

// taskNS identifies what a process runs in by the inode numbers of its
// mount, PID and user namespaces: a container's processes share them.
type taskNS struct{ mnt, pid, user uint64 }

// nsOfRecord returns the namespaces a NAMESPACES record gives.
func nsOfRecord(n *perf.Namespaces) taskNS {
	return taskNS{mnt: n.Links[perf.NamespaceMnt].Inode, pid: n.Links[perf.NamespacePID].Inode, user: n.Links[perf.NamespaceUser].Inode}
}

// nsOf returns the namespaces of process ps: those of its newest
// NAMESPACES record, else those /proc gave, zero when either is unknown.
func nsOf(ps *procState) taskNS {
	if ps.ns != (taskNS{}) {
		return ps.ns
	}
	ns := taskNS{mnt: ps.info.MntNS, pid: ps.info.PidNS, user: ps.info.UserNS}
	if ns.mnt == 0 || ns.pid == 0 || ns.user == 0 {
		return taskNS{}
	}
	return ns
}

// namespaces takes a NAMESPACES record read at time now. A thread's are
// left: a process is labelled by its leader's. A process described
// without a label, or labelled by namespaces that changed since, is
// labelled by them, its process-table line written again.
func (t *tracker) namespaces(n *perf.Namespaces, now int64) {
	ps := t.procs[int(n.PID)]
	if n.PID != n.TID || ps == nil {
		return
	}
	ps.ns = nsOfRecord(n)
	if !ps.described || t.identify == nil || ps.info.Container != nil && !ps.nsLabel {
		return
	}
	info := ps.info
	prev := info.Container
	info.Container = nil
	if !t.labelByNS(ps, &info) || prev != nil && *info.Container == *prev {
		return
	}
	info.Time = now
	ps.info = info
	if t.err == nil {
		t.err = t.w.AddProcessInfo(info)
	}
}

// labelByNS gives pi, the process-table line of process ps that /proc
// could not label, the container of its parent when ps is in its
// parent's namespaces, else that of the live process noteNS noted in
// them, and reports whether it did. Without a NAMESPACES record of ps,
// nothing tells.
func (t *tracker) labelByNS(ps *procState, pi *capture.ProcessInfo) bool {
	ns := ps.ns
	if ns == (taskNS{}) {
		return false
	}
	var c *capture.ContainerInfo
	if parent := t.procs[pi.PPID]; parent != nil && parent.described && parent.info.Container != nil && nsOf(parent) == ns {
		c = parent.info.Container
	} else {
		c = t.labelOfNS(ns)
	}
	if c == nil {
		return false
	}
	if !ps.nsLabel {
		t.nsLabelled++
	}
	pi.Container, ps.nsLabel = c, true
	if pi.MntNS == 0 && pi.PidNS == 0 && pi.UserNS == 0 {
		pi.MntNS, pi.PidNS, pi.UserNS = ns.mnt, ns.pid, ns.user
	}
	return true
}

// noteNS notes process pid, read from /proc and labelled in pi, as the
// one whose label others in its namespaces get (labelOfNS): processes in
// the recorder's mount namespace are not noted (a process gone in it gets
// its parent's label only: the host's processes and those of its chroots,
// labelled by their roots, share it).
func (t *tracker) noteNS(pid int, ps *procState, pi *capture.ProcessInfo) {
	ps.nsLabel = false
	if pi.Container == nil || pi.Container.Kind == container.KindHost || pi.MntNS == 0 || pi.MntNS == t.hostMnt || pi.PidNS == 0 || pi.UserNS == 0 {
		return
	}
	if t.byNS == nil {
		t.byNS = make(map[taskNS]int)
	}
	ns := taskNS{mnt: pi.MntNS, pid: pi.PidNS, user: pi.UserNS}
	t.byNS[ns] = pid
	ps.noted = ns
}

// unnoteNS forgets process pid as the one noted in its namespaces, as the
// tracker forgets it: a long recording of containers coming and going
// would otherwise keep an entry for each.
func (t *tracker) unnoteNS(pid int, ps *procState) {
	if ps.noted != (taskNS{}) && t.byNS[ps.noted] == pid {
		delete(t.byNS, ps.noted)
	}
}

// labelOfNS returns the label of the process noteNS noted in namespaces
// ns, while it lives: the kernel numbers a namespace created later with
// an inode of one freed, so once it has exited (it and its namespaces
// may be gone) it tells nothing, and is forgotten.
func (t *tracker) labelOfNS(ns taskNS) *capture.ContainerInfo {
	pid, ok := t.byNS[ns]
	if !ok {
		return nil
	}
	ps := t.procs[pid]
	if ps == nil || !ps.described || ps.nsLabel || ps.hasExited() || ps.info.Container == nil || nsOf(ps) != ns {
		delete(t.byNS, ns)
		return nil
	}
	return ps.info.Container
}

// peer returns a live process whose view can open the files of process
// pid, gone before its own was opened: its parent when pid was in its
// parent's namespaces, else the live process noteNS noted in them; 0 for
// none, or when no NAMESPACES record of pid told.
func (t *tracker) peer(pid int) int {
	ps := t.procs[pid]
	if ps == nil || ps.ns == (taskNS{}) {
		return 0
	}
	if pp := ps.info.PPID; pp > 0 {
		if parent := t.procs[pp]; parent != nil && parent.described && !parent.nsLabel && !parent.hasExited() && nsOf(parent) == ps.ns {
			return pp
		}
	}
	if t.labelOfNS(ps.ns) != nil {
		return t.byNS[ps.ns]
	}
	return 0
}
