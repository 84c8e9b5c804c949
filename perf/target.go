package perf

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
)

type targetKind int

const (
	targetAll targetKind = iota
	targetTasks
	targetProcesses
	targetExec
	targetCgroup
)

// Target selects the tasks a [Reader] samples. The zero value is
// [AllTasks].
type Target struct {
	kind targetKind
	ids  []int
	// dir is the cgroup directory of a [Cgroup] target.
	dir string
}

// AllTasks samples every task on every online CPU (perf record -a).
func AllTasks() Target { return Target{kind: targetAll} }

// Tasks samples the given threads (tids) and every thread and process they
// create after the Reader is opened.
func Tasks(tids ...int) Target { return Target{kind: targetTasks, ids: tids} }

// Processes samples every thread of the given running processes (perf
// record -p) and every thread and process they create after the Reader is
// opened. Threads are listed from /proc/PID/task once: a thread created
// while the events are being opened, by a thread whose events are not
// open yet, is missed.
func Processes(pids ...int) Target { return Target{kind: targetProcesses, ids: pids} }

// Exec samples a process that has been started but has not called execve
// yet, such as a child blocked before its exec: the events are enabled by
// that execve (enable_on_exec), so the recording starts exactly with the
// new program and its startup mappings, and follows its threads and
// children.
func Exec(pid int) Target { return Target{kind: targetExec, ids: []int{pid}} }

// Cgroup samples the tasks of the cgroup at directory dir (a directory
// of the hierarchy the perf_event controller is bound to: cgroup v1's
// perf_event, else cgroup v2) and of the cgroups below it, on every online
// CPU, as perf record -a -G does: a container's processes, those it
// starts during the recording and those entering it (podman exec's)
// included. The side-band records (MMAP2, COMM, FORK, EXIT) are those of
// the tasks in it too.
func Cgroup(dir string) Target { return Target{kind: targetCgroup, dir: dir} }

// String describes the target for error messages.
func (t Target) String() string {
	switch t.kind {
	case targetAll:
		return "all tasks"
	case targetTasks:
		return fmt.Sprintf("tids %v", t.ids)
	case targetProcesses:
		return fmt.Sprintf("pids %v", t.ids)
	case targetCgroup:
		return "cgroup " + t.dir
	}
	return fmt.Sprintf("exec of pid %v", t.ids)
}

// isProcess reports whether task tid is the main thread of a process
// the target names: a pid of [Processes] or [Exec]; every task of the
// other targets.
func (t Target) isProcess(tid int) bool {
	switch t.kind {
	case targetProcesses, targetExec:
		return slices.Contains(t.ids, tid)
	}
	return true
}

// tids returns the tasks to open events for; nil means all (pid -1).
func (t Target) tids() ([]int, error) {
	switch t.kind {
	case targetAll, targetCgroup:
		return nil, nil
	case targetProcesses:
		var tids []int
		for _, pid := range t.ids {
			ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
			if err != nil {
				return nil, fmt.Errorf("list threads of pid %d: %w", pid, err)
			}
			for _, e := range ents {
				if tid, err := strconv.Atoi(e.Name()); err == nil {
					tids = append(tids, tid)
				}
			}
		}
		return tids, nil
	}
	if len(t.ids) == 0 {
		return nil, errors.New("no task given")
	}
	for _, id := range t.ids {
		if id <= 0 {
			return nil, fmt.Errorf("invalid task id %d", id)
		}
	}
	return t.ids, nil
}

// onlineCPUs returns the CPUs listed in /sys/devices/system/cpu/online.
func onlineCPUs() ([]int, error) {
	const path = "/sys/devices/system/cpu/online"
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read online cpus: %w", err)
	}
	cpus, err := parseCPUList(string(b))
	if err != nil {
		return nil, fmt.Errorf("parse %s: %w", path, err)
	}
	return cpus, nil
}

// parseCPUList parses the kernel's CPU list format, such as "0-3,8,10-11".
func parseCPUList(s string) ([]int, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, errors.New("empty cpu list")
	}
	var cpus []int
	for part := range strings.SplitSeq(s, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		first, err := strconv.ParseUint(lo, 10, 16)
		if err != nil {
			return nil, fmt.Errorf("cpu list %q: %w", s, err)
		}
		last := first
		if isRange {
			if last, err = strconv.ParseUint(hi, 10, 16); err != nil {
				return nil, fmt.Errorf("cpu list %q: %w", s, err)
			}
		}
		if last < first || (len(cpus) > 0 && int(first) <= cpus[len(cpus)-1]) {
			return nil, fmt.Errorf("cpu list %q is not ascending", s)
		}
		for c := first; c <= last; c++ {
			cpus = append(cpus, int(c))
		}
	}
	return cpus, nil
}
