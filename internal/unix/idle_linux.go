//go:build linux

package unix

import (
	"errors"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// ioprioIdle is IOPRIO_PRIO_VALUE(IOPRIO_CLASS_IDLE, 0): the task does
// disk I/O only when no other task wants the disk.
const ioprioIdle = 3 << 13

// SetIdlePriority makes every thread of this process run at idle CPU
// priority (SCHED_IDLE, nice 19) and idle I/O priority: it runs only when
// nothing else wants the CPU. Linux keeps these per thread, and a thread
// takes its creator's: every thread there is is set, again until no
// thread appears that was not, so that threads made later are idle too.
func SetIdlePriority() error {
	done := make(map[int]bool)
	for range 8 {
		ents, err := os.ReadDir("/proc/self/task")
		if err != nil {
			return err
		}
		added := false
		for _, de := range ents {
			tid, err := strconv.Atoi(de.Name())
			if err != nil || done[tid] {
				continue
			}
			done[tid], added = true, true
			if err := setIdle(tid); err != nil && !errors.Is(err, unix.ESRCH) {
				return err
			}
		}
		if !added {
			return nil
		}
	}
	return errors.New("threads kept appearing while set to idle priority")
}

func setIdle(tid int) error {
	if err := unix.SchedSetAttr(tid, &unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: unix.SCHED_IDLE}, 0); err != nil {
		return err
	}
	// nice stays meaningful if the policy is ever set back to normal.
	if err := unix.Setpriority(unix.PRIO_PROCESS, tid, 19); err != nil {
		return err
	}
	if _, _, e := unix.Syscall(unix.SYS_IOPRIO_SET, 1 /* IOPRIO_WHO_PROCESS */, uintptr(tid), ioprioIdle); e != 0 {
		return e
	}
	return nil
}

// TryLock takes an exclusive advisory lock (flock) on f without waiting:
// false, nil when another open file description holds one.
func TryLock(f *os.File) (bool, error) {
	err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
	if errors.Is(err, unix.EWOULDBLOCK) {
		return false, nil
	}
	return err == nil, err
}

// RedirectStderr makes f this process's standard error (fd 2), for what
// the runtime itself writes there.
func RedirectStderr(f *os.File) error {
	return unix.Dup3(int(f.Fd()), 2, 0)
}
