package capture

import "nsprof/internal/unix"

// monotonicNow returns CLOCK_MONOTONIC in nanoseconds, the capture clock.
func monotonicNow() int64 { return unix.MonotonicNow() }

// Now returns the current time on the capture clock (CLOCK_MONOTONIC, in
// nanoseconds), the clock perf events and Sysprof use.
func Now() int64 { return unix.MonotonicNow() }
