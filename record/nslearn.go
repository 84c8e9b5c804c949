package record

// nsLearner learns, without perf events (--no-perf), the PID-namespace ids
// of the command's processes and threads, which is what a command in a
// namespace of its own writes into its trace fds: with perf events the
// tracker learns them from the processes' lifecycle records. It walks the
// command's process tree from /proc at every tick, so a process that lives
// in its own namespace for less than a tick (100 ms) is not learned, and
// its ids stay as it wrote them.
type nsLearner struct {
	// nsOf holds the PID namespace of each process learned; known, the
	// threads learned.
	nsOf  map[int]uint64
	known map[int]bool
}

// maxTreeWalk bounds the processes one walk visits.
const maxTreeWalk = 4096

// learn walks the process tree of root and records in t's pid map each
// process not seen before (its namespace and parent) and, for those in a
// PID namespace other than the recorder's, the namespace ids of their
// threads not seen before.
func (l *nsLearner) learn(t *tracker, root int) {
	if l.known == nil {
		l.nsOf, l.known = make(map[int]uint64), make(map[int]bool)
	}
	queue := []int{root}
	for n := 0; len(queue) > 0 && n < maxTreeWalk; n++ {
		pid := queue[0]
		queue = queue[1:]
		if kids, err := t.fs.Children(pid); err == nil {
			queue = append(queue, kids...)
		}
		l.process(t, pid)
	}
}

// process learns pid and, in a namespace of its own, its threads.
func (l *nsLearner) process(t *tracker, pid int) {
	ns, ok := l.nsOf[pid]
	if !ok {
		var err error
		ns, err = t.fs.NamespaceID(pid, "pid")
		if err != nil || ns == 0 {
			return
		}
		st, err := t.fs.ReadStatus(pid)
		if err != nil {
			return
		}
		t.pm.addProcess(pid, st.PPid, ns)
		t.pm.addTask(pid, st.NSpid, ns)
		l.nsOf[pid], l.known[pid] = ns, true
	}
	if ns == t.hostNS {
		return
	}
	tids, err := t.fs.Tasks(pid)
	if err != nil {
		return
	}
	for _, tid := range tids {
		if l.known[tid] {
			continue
		}
		if st, err := t.fs.ReadTaskStatus(pid, tid); err == nil {
			t.pm.addTask(tid, st.NSpid, ns)
			l.known[tid] = true
		}
	}
}
