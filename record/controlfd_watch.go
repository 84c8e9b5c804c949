package record

import (
	"errors"
	"sync/atomic"

	"nsprof/internal/unix"
)

// A recorder polled SYSPROF_CONTROL_FD every 2 ms (memprofPoll) for the
// collector's ring requests, so that a thread asking for its ring waits
// no longer than that. Without perf events that polling was most of what
// the recorder did: about 5 % of a CPU on this machine for a command that
// never asks. Without perf events the recorder now waits on the socket
// instead (watch), and polls only while a ring is alive.

// watcher tells the recorder's loop when the control socket has something
// to read: a request, or its writers' end.
type watcher struct {
	ready  chan struct{}
	stop   chan struct{}
	failed atomic.Bool // poll failed: the loop polls again
}

// watchTimeout is how long one poll of the socket waits, in ms: how late
// the watcher notices it was stopped.
const watchTimeout = 50

// watch starts watching the socket.
func (c *controlFD) watch() {
	w := &watcher{ready: make(chan struct{}), stop: make(chan struct{})}
	c.w = w
	fd := c.ours
	go func() {
		for {
			select {
			case <-w.stop:
				return
			default:
			}
			ok, err := unix.PollReadable(fd, watchTimeout)
			if err != nil && !errors.Is(err, unix.EINTR) {
				w.failed.Store(true)
				return
			}
			if !ok {
				continue
			}
			// The loop reads what is pending before it receives
			// again; a poll between may see it once more.
			select {
			case w.ready <- struct{}{}:
			case <-w.stop:
				return
			}
		}
	}()
}

// unwatch stops the watcher, if any. The goroutine leaves within
// watchTimeout.
func (c *controlFD) unwatch() {
	if c.w != nil {
		close(c.w.stop)
		c.w = nil
	}
}

// readyC returns the channel on which the watcher says the socket has
// something to read; nil (never ready) without one.
func (c *controlFD) readyC() <-chan struct{} {
	if c == nil || c.w == nil {
		return nil
	}
	return c.w.ready
}

// needsPolling reports whether the loop must call poll every memprofPoll:
// a ring is alive (its frames are written as the copier copies them), or
// nothing watches the socket.
func (c *controlFD) needsPolling() bool {
	if c.w == nil || c.w.failed.Load() {
		return !c.closed
	}
	for _, g := range c.rings {
		if !g.done.Load() {
			return true
		}
	}
	return false
}
