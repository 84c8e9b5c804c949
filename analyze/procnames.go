package analyze

import (
	"cmp"
	"slices"
	"strings"

	"nsprof/capture"
)

// A process that exec'd another program during a capture ran under one
// name before and another after: perf gives each sample the comm its
// thread had when it was taken (`perf report --sort comm` lists the
// samples before an exec under the earlier program). A Process keeps
// its last names in Comm and Cmdline, and the names it had before in
// names, which [Process.NameAt] reads by time.

// procName is what a process was called from a time on.
type procName struct {
	since         int64
	comm, cmdline string
}

// NameAt returns the comm and command line of the program pr ran at time
// t: the last ones ([Process.Comm], [Process.Cmdline]) unless pr exec'd
// another program after t during the capture. A time before the first
// name the capture gives is the first name's.
func (pr *Process) NameAt(t int64) (comm, cmdline string) {
	if i := pr.NameIndex(t); i < len(pr.names) {
		n := &pr.names[i]
		return n.comm, n.cmdline
	}
	return pr.Comm, pr.Cmdline
}

// NameIndex numbers the program pr ran at time t, from 0 for the first
// the capture names: always 0 unless pr is [Process.Renamed].
func (pr *Process) NameIndex(t int64) int {
	i, _ := slices.BinarySearchFunc(pr.names, t, func(n procName, t int64) int {
		if n.since <= t {
			return -1
		}
		return 1
	})
	return max(i-1, 0)
}

// Renamed reports whether pr ran more than one program during the
// capture (see [Process.NameAt]).
func (pr *Process) Renamed() bool { return len(pr.names) > 1 }

// nameHistory gathers the names each process is given over the capture:
// from the PROCESS frames (their command lines, each written when a
// process is described, at its exec too) and from nsprof's process file
// (comm and command line), which is preferred where it has the process.
type nameHistory struct {
	frames, file map[int32][]procName
}

// frame notes a PROCESS frame.
func (h *nameHistory) frame(f *capture.Process) {
	if h.frames == nil {
		h.frames = make(map[int32][]procName)
	}
	h.frames[f.PID] = append(h.frames[f.PID], procName{since: f.Time, cmdline: f.Cmdline})
}

// info notes an entry of the process file.
func (h *nameHistory) info(pi *capture.ProcessInfo) {
	if h.file == nil {
		h.file = make(map[int32][]procName)
	}
	pid := int32(pi.PID)
	h.file[pid] = append(h.file[pid], procName{since: pi.Time, comm: pi.Comm, cmdline: strings.Join(pi.Cmdline, " ")})
}

// apply gives each process of procs that had more than one name its
// names (see [Process.NameAt]).
func (h *nameHistory) apply(procs map[int32]*Process) {
	for pid, pr := range procs {
		pr.names = h.of(pid)
	}
}

// of returns the distinct names of process pid in time order, nil when
// it had only one.
func (h *nameHistory) of(pid int32) []procName {
	names := h.file[pid]
	if len(names) == 0 {
		names = h.frames[pid]
	}
	if len(names) < 2 {
		return nil
	}
	names = distinctNames(names)
	if len(names) < 2 {
		return nil
	}
	return names
}

// distinctNames sorts names by time and merges each into the one before
// when it names the same program (a process described again); a comm
// left empty is the command line's first word's base name, and a
// description with neither names nothing and is left out. nsprof record
// before 2026-11-29 gave a child it found gone its parent's command line
// as comm, with no command line: such a comm (one with a space, and no
// command line) is taken as the command line it is.
func distinctNames(names []procName) []procName {
	slices.SortStableFunc(names, func(a, b procName) int { return cmp.Compare(a.since, b.since) })
	out := names[:0]
	for _, n := range names {
		if n.cmdline == "" && strings.Contains(n.comm, " ") {
			n.cmdline, n.comm = n.comm, ""
		}
		if n.comm == "" && n.cmdline == "" {
			continue // described without a name (found gone): names nothing
		}
		if n.comm == "" {
			n.comm = commOf(n.cmdline)
		}
		if k := len(out); k > 0 && out[k-1].comm == n.comm && (out[k-1].cmdline == n.cmdline || n.cmdline == "") {
			continue
		}
		out = append(out, n)
	}
	return out
}
