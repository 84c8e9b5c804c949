package record

// pidMap knows, for every thread seen, its id in its innermost PID
// namespace, so data written by a process with its own view of pids (trace
// fd captures, memprof rings) can be put on the right host threads.
type pidMap struct {
	// inner[pidns][nsid] = host id
	inner map[uint64]map[int]int
	// nsOf[hostPID] = pid namespace inode
	nsOf map[int]uint64
	// parent[hostPID] = host parent pid, to find a process tree
	parent map[int]int
	hostNS uint64
}

func newPIDMap(hostNS uint64) *pidMap {
	return &pidMap{inner: make(map[uint64]map[int]int), nsOf: make(map[int]uint64), parent: make(map[int]int), hostNS: hostNS}
}

// addProcess records a process's namespace and parent.
func (m *pidMap) addProcess(pid, ppid int, pidns uint64) {
	if pidns != 0 {
		m.nsOf[pid] = pidns
	}
	if ppid > 0 {
		m.parent[pid] = ppid
	}
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

// inTree reports whether pid is root or one of its descendants.
func (m *pidMap) inTree(pid, root int) bool {
	for i := 0; i < 4096 && pid > 0; i++ {
		if pid == root {
			return true
		}
		pid = m.parent[pid]
	}
	return false
}

// translatorFor returns the id translation for captures written by the
// process tree rooted at root. Ids are looked up in the PID namespaces
// (other than the recorder's) of the tree's processes; an id found in
// exactly one of them is translated, any other is kept.
func (m *pidMap) translatorFor(root int) func(int32) int32 {
	namespaces := map[uint64]bool{}
	for pid, ns := range m.nsOf {
		if ns != m.hostNS && m.inTree(pid, root) {
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
