package perf

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"time"

	"nsprof/internal/unix"
)

// poller waits until rings may hold records.
type poller interface {
	// wait blocks until an event fd is readable or hung up, wake is
	// called, or the deadline (zero: none) passes, in which case it
	// returns os.ErrDeadlineExceeded. It calls hup with the index of each
	// event fd whose task and inherited children have all exited; such fds
	// are not watched again.
	wait(deadline time.Time, hup func(index int)) error
	// wake makes a current or the next wait return. It is safe to call
	// from any goroutine, but not after close.
	wake() error
	close() error
}

var _ poller = (*epollPoller)(nil)

// epollPoller watches perf event fds and an eventfd used for wakeups.
type epollPoller struct {
	epfd, evfd int
	fds        []int
	events     []unix.EpollEvent
	buf        [8]byte
}

// wakeIndex marks the eventfd in epoll data.
const wakeIndex = -1

func newEpollPoller(fds []int) (p *epollPoller, err error) {
	p = &epollPoller{epfd: -1, evfd: -1, fds: fds}
	defer func() {
		if err != nil {
			p.close()
		}
	}()
	if p.epfd, err = unix.EpollCreate1(unix.EPOLL_CLOEXEC); err != nil {
		return nil, fmt.Errorf("epoll_create1: %w", err)
	}
	if p.evfd, err = unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK); err != nil {
		return nil, fmt.Errorf("eventfd: %w", err)
	}
	ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: wakeIndex}
	if err = unix.EpollCtl(p.epfd, unix.EPOLL_CTL_ADD, p.evfd, &ev); err != nil {
		return nil, fmt.Errorf("epoll_ctl add eventfd: %w", err)
	}
	for i, fd := range fds {
		ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(i)}
		if err = unix.EpollCtl(p.epfd, unix.EPOLL_CTL_ADD, fd, &ev); err != nil {
			return nil, fmt.Errorf("epoll_ctl add perf fd %d: %w", fd, err)
		}
	}
	p.events = make([]unix.EpollEvent, min(len(fds)+1, 64))
	return p, nil
}

func (p *epollPoller) wait(deadline time.Time, hup func(int)) error {
	for {
		msec := -1
		if !deadline.IsZero() {
			d := time.Until(deadline)
			if d < 0 {
				d = 0
			}
			msec = int((d + time.Millisecond - 1) / time.Millisecond)
		}
		n, err := unix.EpollWait(p.epfd, p.events, msec)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return fmt.Errorf("epoll_wait: %w", err)
		}
		if n == 0 {
			if !deadline.IsZero() && !time.Now().Before(deadline) {
				return os.ErrDeadlineExceeded
			}
			continue
		}
		for _, ev := range p.events[:n] {
			switch {
			case ev.Fd == wakeIndex:
				unix.Read(p.evfd, p.buf[:]) // reset the counter
			case ev.Events&(unix.EPOLLHUP|unix.EPOLLERR) != 0:
				// Level-triggered HUP would fire forever: stop watching.
				unix.EpollCtl(p.epfd, unix.EPOLL_CTL_DEL, p.fds[ev.Fd], nil)
				hup(int(ev.Fd))
			}
		}
		return nil
	}
}

func (p *epollPoller) wake() error {
	var one [8]byte
	binary.NativeEndian.PutUint64(one[:], 1)
	if _, err := unix.Write(p.evfd, one[:]); err != nil && !errors.Is(err, unix.EAGAIN) {
		return fmt.Errorf("write eventfd: %w", err)
	}
	return nil
}

func (p *epollPoller) close() error {
	var errs []error
	for _, fd := range []int{p.evfd, p.epfd} {
		if fd >= 0 {
			errs = append(errs, unix.Close(fd))
		}
	}
	p.epfd, p.evfd = -1, -1
	return errors.Join(errs...)
}
