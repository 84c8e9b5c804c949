package proc

import (
	"errors"
	"os"
	"slices"
	"strconv"
	"strings"

	"nsprof/internal/unix"
)

// PIDs lists the processes visible in the proc mount, in ascending order.
// Processes in PID namespaces nested below the mount's are listed by their
// IDs in the mount's namespace.
func (fs FS) PIDs() ([]int, error) {
	return listIDs(fs.root())
}

// Tasks lists the thread IDs of pid, in ascending order. The first is
// usually pid itself, unless the main thread has exited.
func (fs FS) Tasks(pid int) ([]int, error) {
	return listIDs(fs.pidPath(pid, "task"))
}

// Children lists the processes whose parent is pid (the children of each
// of its threads, from /proc/PID/task/TID/children), in ascending order.
// Threads that exit while being read are left out.
func (fs FS) Children(pid int) ([]int, error) {
	tids, err := fs.Tasks(pid)
	if err != nil {
		return nil, err
	}
	var out []int
	for _, tid := range tids {
		b, err := os.ReadFile(fs.taskPath(pid, tid, "children"))
		if errors.Is(err, os.ErrNotExist) || errors.Is(err, unix.ESRCH) {
			continue
		}
		if err != nil {
			return nil, err
		}
		for _, f := range strings.Fields(string(b)) {
			if n, err := strconv.ParseUint(f, 10, 31); err == nil && n > 0 {
				out = append(out, int(n))
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// listIDs returns the numeric directory entries of dir, sorted.
func listIDs(dir string) ([]int, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	ids := make([]int, 0, len(entries))
	for _, e := range entries {
		n, err := strconv.ParseUint(e.Name(), 10, 31)
		if err != nil || n == 0 || !e.IsDir() {
			continue
		}
		ids = append(ids, int(n))
	}
	slices.Sort(ids)
	return ids, nil
}

// ThreadNSpid pairs a thread's ID in the proc mount's PID namespace with its
// ID in the thread's own, innermost PID namespace.
type ThreadNSpid struct {
	// TID is the ID in the proc mount's namespace: the host ID for
	// [DefaultFS], and the ID that perf events report.
	TID int
	// NSTID is the ID in the innermost namespace, the one the thread itself
	// sees from gettid(2). It equals TID outside nested namespaces and on
	// kernels older than 4.1, which lack NSpid.
	NSTID int
}

// ThreadNSpids returns, for every thread of pid, its ID as seen through fs
// and in its innermost PID namespace, ordered by TID. Threads that exit
// while being read are left out.
func (fs FS) ThreadNSpids(pid int) ([]ThreadNSpid, error) {
	tids, err := fs.Tasks(pid)
	if err != nil {
		return nil, err
	}
	out := make([]ThreadNSpid, 0, len(tids))
	for _, tid := range tids {
		st, err := fs.ReadTaskStatus(pid, tid)
		if errors.Is(err, os.ErrNotExist) || errors.Is(err, unix.ESRCH) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, ThreadNSpid{TID: tid, NSTID: st.InnermostPid()})
	}
	return out, nil
}

// ThreadNSpids returns the thread IDs of pid through [DefaultFS].
func ThreadNSpids(pid int) ([]ThreadNSpid, error) { return DefaultFS.ThreadNSpids(pid) }

// PIDs lists the processes in /proc through [DefaultFS].
func PIDs() ([]int, error) { return DefaultFS.PIDs() }

// Tasks lists the threads of pid through [DefaultFS].
func Tasks(pid int) ([]int, error) { return DefaultFS.Tasks(pid) }
