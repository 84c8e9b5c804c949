//go:build !linux

package unix

import "os"

// SetIdlePriority makes this process run at idle priority (Linux only).
func SetIdlePriority() error { return errNonLinux("sched_setattr") }

// TryLock takes an exclusive advisory lock on f without waiting (Linux only).
func TryLock(f *os.File) (bool, error) { return false, errNonLinux("flock") }

// RedirectStderr makes f this process's standard error (Linux only).
func RedirectStderr(f *os.File) error { return errNonLinux("dup3") }
