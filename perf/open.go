package perf

import (
	"errors"
	"fmt"
	"os"
	"runtime"

	"nsprof/internal/unix"
)

// Open opens sampling events for target with the default [Options].
func Open(target Target) (*Reader, error) {
	return OpenWithOptions(target, Options{})
}

// OpenWithOptions opens sampling events for target on every online CPU
// and maps one ring buffer per CPU.
//
// Events are opened per task and per CPU, never with cpu -1: the kernel
// refuses to mmap an inherited event that is not bound to a CPU, and
// per-CPU rings keep each CPU's records in time order. For several tasks,
// the first event on a CPU owns that CPU's ring and the others are
// redirected into it (PERF_EVENT_IOC_SET_OUTPUT), so a process with T
// threads costs T file descriptors per CPU but only one ring per CPU.
//
// With opts.SampleCPUWide, each CPU's ring belongs to the sampling
// event of every task on that CPU instead, and the per-task events
// (the tracepoints, the first stack tracepoint or else a dummy event
// with the side-band records) and the per-CPU tracepoints are
// redirected into it.
//
// CPUs that are offline (ENODEV) are skipped, as are listed threads that
// exit before their events are opened (ESRCH). Unless opts.StartDisabled
// is set, the events are enabled once all of them are set up; [Exec]
// targets are enabled by their execve instead.
func OpenWithOptions(target Target, opts Options) (_ *Reader, err error) {
	pageSize := unix.Getpagesize()
	s, err := opts.settings(pageSize, runtime.GOARCH)
	if err != nil {
		return nil, fmt.Errorf("perf options: %w", err)
	}
	pids, err := target.tids()
	if err != nil {
		return nil, err
	}
	systemWide := target.kind == targetAll || target.kind == targetCgroup
	flags := unix.PERF_FLAG_FD_CLOEXEC
	if systemWide {
		pids = []int{-1}
	}
	if target.kind == targetCgroup {
		// The cgroup's directory stands for the pid; the events hold
		// the cgroup, not the descriptor.
		dir, err := os.Open(target.dir)
		if err != nil {
			return nil, fmt.Errorf("open cgroup: %w", err)
		}
		defer dir.Close()
		pids = []int{int(dir.Fd())}
		flags |= unix.PERF_FLAG_PID_CGROUP
	}
	cpus, err := onlineCPUs()
	if err != nil {
		return nil, err
	}

	res := &resources{}
	defer func() {
		if err != nil {
			res.close()
		}
	}()
	ev := s.Event
	onExec := target.kind == targetExec
	cpuWide := s.SampleCPUWide && !systemWide
	attr := s.attr(ev, systemWide, onExec)
	sideband := -1 // the tracepoint opened as attr
	if cpuWide {
		attr = s.dummyAttr(onExec)
		if sideband = s.sidebandTracepoint(); sideband >= 0 {
			attr = s.sidebandTracepointAttr(sideband, onExec)
		}
	}
	canSkipTask := len(pids) > 1
	for _, cpu := range cpus {
		owner := -1
		if cpuWide {
			// The sampling event of every task on the CPU owns its ring.
			cattr := s.cpuWideAttr(ev, onExec)
			fd, err := unix.PerfEventOpen(&cattr, -1, cpu, -1, unix.PERF_FLAG_FD_CLOEXEC)
			if err != nil && ev == EventCycles && len(res.fds) == 0 && noPMU(err) {
				ev = EventCPUClock
				cattr = s.cpuWideAttr(ev, onExec)
				fd, err = unix.PerfEventOpen(&cattr, -1, cpu, -1, unix.PERF_FLAG_FD_CLOEXEC)
			}
			switch {
			case errors.Is(err, unix.ENODEV):
				continue // CPU went offline
			case err != nil && ev.Hardware() && noPMU(err):
				return nil, noPMUError(ev, err)
			case err != nil:
				return nil, openError(-1, cpu, s.ExcludeKernel, err)
			}
			res.fds = append(res.fds, fd)
			res.cpuWide++
			id, err := unix.PerfEventID(fd)
			if err != nil {
				return nil, fmt.Errorf("id of the perf event of cpu %d: %w", cpu, err)
			}
			if res.cpuWideIDs == nil {
				res.cpuWideIDs = make(map[uint64]bool)
			}
			res.cpuWideIDs[id] = true
			rg, err := mapRing(cpu, fd, pageSize, s.RingPages)
			if err != nil {
				return nil, fmt.Errorf("perf event of cpu %d: %w", cpu, err)
			}
			res.rings = append(res.rings, rg)
			owner = fd
			for i, id := range s.tpIDs {
				if !s.tpCPUWide[i] {
					continue
				}
				tattr := s.cpuWideTracepointAttr(id, onExec)
				tfd, err := unix.PerfEventOpen(&tattr, -1, cpu, -1, unix.PERF_FLAG_FD_CLOEXEC)
				if err != nil {
					return nil, fmt.Errorf("open tracepoint %s on cpu %d: %w", s.tpNames[i], cpu, err)
				}
				res.fds = append(res.fds, tfd)
				res.cpuWide++
				if err := unix.IoctlSetInt(tfd, unix.PERF_EVENT_IOC_SET_OUTPUT, owner); err != nil {
					return nil, fmt.Errorf("redirect tracepoint %s of cpu %d: %w", s.tpNames[i], cpu, err)
				}
				id, err := unix.PerfEventID(tfd)
				if err != nil {
					return nil, fmt.Errorf("id of tracepoint %s of cpu %d: %w", s.tpNames[i], cpu, err)
				}
				res.cpuWideIDs[id] = true
			}
		}
		for _, pid := range pids {
			fd, err := unix.PerfEventOpen(&attr, pid, cpu, -1, flags)
			if err != nil && ev == EventCycles && !cpuWide && len(res.fds) == 0 && noPMU(err) {
				ev = EventCPUClock
				attr = s.attr(ev, systemWide, onExec)
				fd, err = unix.PerfEventOpen(&attr, pid, cpu, -1, flags)
			}
			if err != nil && attr.Bits&attrNamespaces != 0 && len(res.fds) == res.cpuWide && errors.Is(err, unix.EACCES) {
				// Namespace records need CAP_PERFMON: the events
				// are opened without them.
				s.Namespaces = false
				attr.Bits &^= attrNamespaces
				fd, err = unix.PerfEventOpen(&attr, pid, cpu, -1, flags)
			}
			if errors.Is(err, unix.ENODEV) && owner < 0 {
				break // CPU went offline
			}
			if errors.Is(err, unix.ESRCH) && canSkipTask {
				continue
			}
			if err != nil && ev.Hardware() && !cpuWide && noPMU(err) {
				return nil, noPMUError(ev, err)
			}
			if err != nil && target.kind == targetCgroup {
				return nil, fmt.Errorf("open perf event for %v on cpu %d: %w", target, cpu, err)
			}
			if err != nil {
				return nil, openError(pid, cpu, s.ExcludeKernel, err)
			}
			res.fds = append(res.fds, fd)
			if owner >= 0 {
				if err := unix.IoctlSetInt(fd, unix.PERF_EVENT_IOC_SET_OUTPUT, owner); err != nil {
					return nil, fmt.Errorf("redirect perf event of pid %d on cpu %d: %w", pid, cpu, err)
				}
			} else {
				rg, err := mapRing(cpu, fd, pageSize, s.RingPages)
				if err != nil {
					return nil, fmt.Errorf("perf event of pid %d: %w", pid, err)
				}
				res.rings = append(res.rings, rg)
				owner = fd
			}
			// Tracepoints of the same task and CPU share the ring.
			for i, id := range s.tpIDs {
				if i == sideband || cpuWide && s.tpCPUWide[i] {
					continue
				}
				tattr := s.tracepointAttr(id, s.tpStack[i], s.tpUser[i], systemWide, onExec)
				tfd, err := unix.PerfEventOpen(&tattr, pid, cpu, -1, flags)
				if err != nil {
					return nil, fmt.Errorf("open tracepoint %s for pid %d on cpu %d: %w", s.tpNames[i], pid, cpu, err)
				}
				res.fds = append(res.fds, tfd)
				if err := unix.IoctlSetInt(tfd, unix.PERF_EVENT_IOC_SET_OUTPUT, owner); err != nil {
					return nil, fmt.Errorf("redirect tracepoint %s of pid %d on cpu %d: %w", s.tpNames[i], pid, cpu, err)
				}
			}
		}
	}
	if len(s.Uprobes) > 0 && !systemWide {
		if res.uprobeDefs, err = defineUprobes(s.Uprobes); err != nil {
			return nil, err
		}
		if err := s.openUprobes(res, res.uprobeDefs, pids, cpus, pageSize, target.isProcess, canSkipTask, onExec); err != nil {
			return nil, err
		}
	}
	if len(res.rings) == 0 {
		return nil, fmt.Errorf("open perf events for %v: no online cpu or no live task", target)
	}
	p, err := newEpollPoller(res.fds)
	if err != nil {
		return nil, err
	}
	res.poll = p
	r := newReader(res, s.format(), ev, !systemWide)
	r.namespaces = s.Namespaces
	if !s.StartDisabled && !onExec {
		if err := r.Enable(); err != nil {
			r.Close()
			return nil, err
		}
	}
	return r, nil
}

// noPMUError says that hardware event ev cannot be counted here, and which
// events can.
func noPMUError(ev Event, err error) error {
	return fmt.Errorf("open perf event %s: a hardware event, and this machine has no PMU that counts it (a virtual machine without PMU passthrough?); software events work: cpu-clock, task-clock, page-faults, context-switches: %w", ev, err)
}

// noPMU reports errors meaning the hardware event does not exist here.
func noPMU(err error) bool {
	return errors.Is(err, unix.ENOENT) || errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.ENODEV)
}
