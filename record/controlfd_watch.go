package record

import (
	"errors"
	"sync/atomic"

	"nsprof/internal/unix"
)

// A recorder polled SYSPROF_CONTROL_FD every 2 ms (memprofPoll) for the
// collector's ring requests, so that a thread asking for its ring waits
// no longer than that. That polling was most of what a recorder of
// trace-fd marks did while recording: about 1900 wakeups a second and 5 %
// of a CPU on this machine, for a command that never asks. The recorder
// now waits on the socket instead (watch), and polls only while a ring is
// alive.

// watcher tells the recorder's loop when the control socket has something
// to read: a request, or its writers' end.
type watcher struct {
	// ready is sent on when the loop waits on channels (no perf events).
	ready chan struct{}
	// wake, with perf events, makes the loop's waiting perf read return
	// (perf.Reader.Flush); ack then tells the watcher the loop went round
	// once, having read the socket.
	wake   func() error
	ack    chan struct{}
	stop   chan struct{}
	failed atomic.Bool // poll failed: the loop polls again
}

// watchTimeout is how long one poll of the socket waits, in ms: how late
// the watcher notices it was stopped.
const watchTimeout = 50

// watch starts watching the socket. wake, if not nil, is how the watcher
// wakes the loop; else it sends on [controlFD.readyC].
func (c *controlFD) watch(wake func() error) {
	w := &watcher{ready: make(chan struct{}), wake: wake, ack: make(chan struct{}, 1), stop: make(chan struct{})}
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
			// The loop reads what is pending before it answers; a
			// poll between may see it once more.
			if w.wake != nil {
				if w.wake() != nil {
					w.failed.Store(true)
					return
				}
				select {
				case <-w.ack:
				case <-w.stop:
					return
				}
				continue
			}
			select {
			case w.ready <- struct{}{}:
			case <-w.stop:
				return
			}
		}
	}()
}

// polled tells the watcher, if it woke the loop through wake, that the
// loop read the socket.
func (c *controlFD) polled() {
	if c.w != nil {
		select {
		case c.w.ack <- struct{}{}:
		default:
		}
	}
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
// something to read; nil (never ready) without one, or with perf events.
func (c *controlFD) readyC() <-chan struct{} {
	if c == nil || c.w == nil || c.w.wake != nil {
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
