package testutils

import (
	"os"
	"syscall"
	"testing"
)

// systemWideLock orders, across the test processes `go test ./...` runs
// at once, the tests that record the whole system against the one that
// needs no such recording beside it.
const systemWideLock = "/run/nsprof-systemwide-test.lock"

// SystemWide holds, until t ends, the lock of the tests that record the
// whole system: shared for those, exclusive for a test that must run with
// no system-wide recording of nsprof's default settings open beside it
// (their build-id MMAP2 events make the kernel flag other sessions' MMAP2
// records; see README, Compatibility). Tests of one package run one at a
// time anyway; the lock is for the packages run in parallel.
func SystemWide(t testing.TB, exclusive bool) {
	t.Helper()
	f, err := os.OpenFile(systemWideLock, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		t.Fatalf("system-wide test lock: %v", err)
	}
	how := syscall.LOCK_SH
	if exclusive {
		how = syscall.LOCK_EX
	}
	if err := syscall.Flock(int(f.Fd()), how); err != nil {
		f.Close()
		t.Fatalf("system-wide test lock %s: %v", systemWideLock, err)
	}
	t.Cleanup(func() { f.Close() }) // releases the lock
}
