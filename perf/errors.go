package perf

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"nsprof/internal/unix"
)

var (
	// ErrClosed is returned, wrapped, by methods of a closed [Reader].
	ErrClosed = os.ErrClosed
	// ErrFlushed is returned by [Reader.ReadInto] once the records that
	// were pending when [Reader.Flush] was called have been read.
	ErrFlushed = errors.New("perf records flushed")
)

// openError wraps a perf_event_open failure with the task, CPU and, for
// permission errors, what refused it (see [permissionCause]).
func openError(pid, cpu int, excludeKernel bool, err error) error {
	what := fmt.Sprintf("pid %d", pid)
	if pid == -1 {
		what = "all tasks"
	}
	switch {
	case errors.Is(err, unix.EACCES), errors.Is(err, unix.EPERM):
		return fmt.Errorf("open perf event for %s on cpu %d (%s): %w", what, cpu, permissionCause(pid, excludeKernel), err)
	case errors.Is(err, unix.EMFILE):
		return fmt.Errorf("open perf event for %s on cpu %d (one fd per thread per CPU; raise RLIMIT_NOFILE): %w", what, cpu, err)
	case errors.Is(err, unix.EINVAL):
		return fmt.Errorf("open perf event for %s on cpu %d (frequency limit kernel.perf_event_max_sample_rate=%s): %w",
			what, cpu, readSysctl("perf_event_max_sample_rate"), err)
	}
	return fmt.Errorf("open perf event for %s on cpu %d: %w", what, cpu, err)
}

// Paranoid returns kernel.perf_event_paranoid: -1 allows everything to
// every user; 0 forbids raw tracepoint data, 1 CPU-wide events and 2
// kernel sampling to users without CAP_PERFMON (or CAP_SYS_ADMIN); Debian
// kernels take 3 to forbid perf events to them altogether.
func Paranoid() (int, error) {
	b, err := os.ReadFile("/proc/sys/kernel/perf_event_paranoid")
	if err != nil {
		return 0, err
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return 0, fmt.Errorf("kernel.perf_event_paranoid: %w", err)
	}
	return n, nil
}

// MaxSampleRate returns kernel.perf_event_max_sample_rate, the highest
// frequency the kernel accepts (perf record -F max). The kernel lowers it
// by itself when sampling takes too long.
func MaxSampleRate() (int, error) {
	b, err := os.ReadFile("/proc/sys/kernel/perf_event_max_sample_rate")
	if err != nil {
		return 0, err
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("kernel.perf_event_max_sample_rate %q is not a rate", strings.TrimSpace(string(b)))
	}
	return n, nil
}

// permissionCause says which of the kernel's checks most likely refused a
// perf event for pid (-1: all tasks) to this process: access to another
// user's process (perf_event_open needs ptrace read access: the same real
// uid and gid as the target's, or CAP_SYS_PTRACE), or the paranoid
// level, which it reads.
func permissionCause(pid int, excludeKernel bool) string {
	level := readSysctl("perf_event_paranoid")
	if os.Geteuid() == 0 {
		return "refused to root: a security module or kernel lockdown, kernel.perf_event_paranoid=" + level
	}
	if pid > 0 {
		if c := ownerMismatch(pid); c != "" {
			return c
		}
	}
	p, err := Paranoid()
	switch {
	case err != nil:
		return fmt.Sprintf("kernel.perf_event_paranoid unreadable: %v", err)
	case p >= 3:
		return fmt.Sprintf("kernel.perf_event_paranoid=%d forbids perf events to users without CAP_PERFMON", p)
	case pid == -1 && p >= 1:
		return fmt.Sprintf("kernel.perf_event_paranoid=%d: sampling all tasks needs root or CAP_PERFMON, or the sysctl at 0 or below", p)
	case p >= 2 && !excludeKernel:
		return fmt.Sprintf("kernel.perf_event_paranoid=%d: users without CAP_PERFMON may sample user space only", p)
	case pid > 0:
		return fmt.Sprintf("ptrace access to pid %d denied: it is not dumpable (setuid, or changed its credentials) or a security module refused; kernel.perf_event_paranoid=%d is not the cause", pid, p)
	}
	return fmt.Sprintf("kernel.perf_event_paranoid=%d; needs root or CAP_PERFMON", p)
}

// ownerMismatch returns why this process may not sample pid when its
// real, effective or saved uid or gid is not this process's real one
// (the kernel's ptrace read check), else "".
func ownerMismatch(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return ""
	}
	for _, id := range []struct {
		field, kind string
		mine        int
	}{{"Uid:", "user", os.Getuid()}, {"Gid:", "group", os.Getgid()}} {
		for line := range strings.Lines(string(b)) {
			rest, ok := strings.CutPrefix(line, id.field)
			if !ok {
				continue
			}
			ids := strings.Fields(rest)
			for _, v := range ids[:min(3, len(ids))] {
				if n, err := strconv.Atoi(v); err == nil && n != id.mine {
					return fmt.Sprintf("pid %d runs as %s %d, nsprof as %d: the kernel lets only the same %s, root or CAP_SYS_PTRACE sample it (ptrace access denied; kernel.perf_event_paranoid does not matter)",
						pid, id.kind, n, id.mine, id.kind)
				}
			}
		}
	}
	return ""
}

func readSysctl(name string) string {
	b, err := os.ReadFile("/proc/sys/kernel/" + name)
	if err != nil {
		return "?"
	}
	return strings.TrimSpace(string(b))
}
