package perf

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"syscall"
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
//
// It waits in the Go runtime's network poller rather than in a blocking
// epoll_wait: its epoll fd is itself pollable, so the waiting goroutine
// parks and frees its thread. A goroutine blocked in a system call keeps
// the runtime's sysmon thread waking every 20 µs to 10 ms to retake its
// P, which cost a profiled program on every CPU context switches and
// about half of the recorder's CPU while it waited (perf record -p on
// nsprof, bench/record-overhead.sh).
type epollPoller struct {
	epfd, evfd int
	// file holds epfd, non-blocking, in the runtime poller; conn waits
	// on it.
	file   *os.File
	conn   syscall.RawConn
	fds    []int
	events []unix.EpollEvent
	buf    [8]byte
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
	if err = unix.SetNonblock(p.epfd, true); err != nil {
		return nil, fmt.Errorf("epoll fd non-blocking: %w", err)
	}
	// From here the file owns epfd.
	p.file = os.NewFile(uintptr(p.epfd), "epoll")
	if p.conn, err = p.file.SyscallConn(); err != nil {
		return nil, fmt.Errorf("epoll fd: %w", err)
	}
	return p, nil
}

func (p *epollPoller) wait(deadline time.Time, hup func(int)) error {
	if err := p.file.SetReadDeadline(deadline); err != nil {
		return fmt.Errorf("epoll fd deadline: %w", err)
	}
	var n int
	var werr error
	woken := false
	err := p.conn.Read(func(uintptr) bool {
		for {
			n, werr = unix.EpollWait(p.epfd, p.events, 0)
			if !errors.Is(werr, unix.EINTR) {
				break
			}
		}
		// Nothing ready: park until the runtime poller sees epfd readable.
		// Once it has, return even if epoll_wait found nothing: a perf
		// fd's readiness is consumed by the poll that reports it (the
		// kernel swaps the ring's poll state to zero), and the runtime's
		// own epoll already polled epfd, and so every perf fd in it, to
		// wake us. The rings hold records all the same; the reader looks.
		ready := werr != nil || n > 0 || woken
		woken = true
		return ready
	})
	switch {
	case errors.Is(err, os.ErrDeadlineExceeded):
		return os.ErrDeadlineExceeded
	case err != nil:
		return fmt.Errorf("waiting for perf rings: %w", err)
	case werr != nil:
		return fmt.Errorf("epoll_wait: %w", werr)
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
	if p.evfd >= 0 {
		errs = append(errs, unix.Close(p.evfd))
	}
	switch {
	case p.file != nil:
		errs = append(errs, p.file.Close())
	case p.epfd >= 0:
		errs = append(errs, unix.Close(p.epfd))
	}
	p.file, p.epfd, p.evfd = nil, -1, -1
	return errors.Join(errs...)
}
