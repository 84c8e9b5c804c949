package perf

import (
	"errors"
	"fmt"
	"os"
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
// permission errors, the sysctl that decides them.
func openError(pid, cpu int, err error) error {
	what := fmt.Sprintf("pid %d", pid)
	if pid == -1 {
		what = "all tasks"
	}
	switch {
	case errors.Is(err, unix.EACCES), errors.Is(err, unix.EPERM):
		return fmt.Errorf("open perf event for %s on cpu %d (kernel.perf_event_paranoid=%s; needs root or CAP_PERFMON): %w",
			what, cpu, readSysctl("perf_event_paranoid"), err)
	case errors.Is(err, unix.EMFILE):
		return fmt.Errorf("open perf event for %s on cpu %d (one fd per thread per CPU; raise RLIMIT_NOFILE): %w", what, cpu, err)
	case errors.Is(err, unix.EINVAL):
		return fmt.Errorf("open perf event for %s on cpu %d (frequency limit kernel.perf_event_max_sample_rate=%s): %w",
			what, cpu, readSysctl("perf_event_max_sample_rate"), err)
	}
	return fmt.Errorf("open perf event for %s on cpu %d: %w", what, cpu, err)
}

func readSysctl(name string) string {
	b, err := os.ReadFile("/proc/sys/kernel/" + name)
	if err != nil {
		return "?"
	}
	return strings.TrimSpace(string(b))
}
