package record

// pidMap knows, for every thread seen, its id in its innermost PID
// namespace, so data written by a process with its own view of pids (trace
// fd captures, memprof rings) can be put on the right host threads.
//
// What it holds of a process is let go when the tracker forgets it
// (forget): over a long system-wide recording of processes coming and
// going it grew by two map entries a process seen (35-75 KB a minute
// over a loop of Go compiles). Only the processes of the recorded
// command's tree (root) leave something behind: that they were in the
// tree, and their PID namespace, which its trace fds are translated by
// when the recording ends.
type pidMap struct {
	// inner[pidns][nsid] = host id
	inner map[uint64]map[int]int
	// nsOf[hostPID] = pid namespace inode, for processes outside the
	// recorder's namespace
	nsOf map[int]uint64
	// parent[hostPID] = host parent pid, to find the command's process
	// tree; kept only when there is a command (root)
	parent map[int]int
	hostNS uint64
	// root is the recorded command's pid, 0 without one.
	root int
	// inTreeGone holds the forgotten processes of root's tree, so that
	// their descendants are still found in it; treeNS the PID namespaces
	// (other than the recorder's) of the forgotten ones.
	inTreeGone map[int]bool
	treeNS     map[uint64]bool
}

func newPIDMap(hostNS uint64) *pidMap {
	return &pidMap{inner: make(map[uint64]map[int]int), nsOf: make(map[int]uint64), parent: make(map[int]int), hostNS: hostNS}
}

// setRoot names the recorded command's process, whose tree's trace fds
// are translated (translator).
func (m *pidMap) setRoot(pid int) { m.root = pid }

// addProcess records a process's namespace and parent.
func (m *pidMap) addProcess(pid, ppid int, pidns uint64) {
	delete(m.inTreeGone, pid) // the pid is someone else's now
	if pidns != 0 && pidns != m.hostNS {
		m.nsOf[pid] = pidns
	}
	if ppid > 0 && m.root > 0 {
		m.parent[pid] = ppid
	}
}

// forget lets go of process pid, keeping, when it was in root's tree,
// that it was and its namespace.
func (m *pidMap) forget(pid int) {
	if m.inTree(pid) {
		if m.inTreeGone == nil {
			m.inTreeGone, m.treeNS = make(map[int]bool), make(map[uint64]bool)
		}
		m.inTreeGone[pid] = true
		if ns, ok := m.nsOf[pid]; ok {
			m.treeNS[ns] = true
		}
	}
	delete(m.nsOf, pid)
	delete(m.parent, pid)
}

// addTask records that host id maps to the last id of nspid in namespace
// pidns.
func (m *pidMap) addTask(host int, nspid []int, pidns uint64) {
	if len(nspid) < 2 || pidns == 0 || pidns == m.hostNS {
		return
	}
	ns := m.inner[pidns]
	if ns == nil {
		ns = make(map[int]int)
		m.inner[pidns] = ns
	}
	ns[nspid[len(nspid)-1]] = host
}

// inTree reports whether pid is the command's process or one of its
// descendants.
func (m *pidMap) inTree(pid int) bool {
	if m.root <= 0 {
		return false
	}
	for i := 0; i < 4096 && pid > 0; i++ {
		if pid == m.root || m.inTreeGone[pid] {
			return true
		}
		pid = m.parent[pid]
	}
	return false
}

// translator returns the id translation for captures written by the
// command's process tree, nil without a command. Ids are looked up in
// the PID namespaces (other than the recorder's) of the tree's processes,
// gone or not; an id found in exactly one of them is translated, any
// other is kept.
func (m *pidMap) translator() func(int32) int32 {
	namespaces := map[uint64]bool{}
	for ns := range m.treeNS {
		namespaces[ns] = true
	}
	for pid, ns := range m.nsOf {
		if m.inTree(pid) {
			namespaces[ns] = true
		}
	}
	if len(namespaces) == 0 {
		return nil
	}
	return func(id int32) int32 {
		found, host := 0, 0
		for ns := range namespaces {
			if h, ok := m.inner[ns][int(id)]; ok {
				found++
				host = h
			}
		}
		if found == 1 {
			return int32(host)
		}
		return id
	}
}
