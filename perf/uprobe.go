package perf

import (
	"errors"
	"fmt"
	"os"

	"nsprof/internal/unix"
)

// ErrNoUprobes is returned, wrapped, when no tracefs with uprobe_events
// is mounted at [TracefsDirs] (CONFIG_UPROBE_EVENTS off, or tracefs not
// mounted).
var ErrNoUprobes = errors.New("no uprobe_events in tracefs (CONFIG_UPROBE_EVENTS; mount -t tracefs nodev /sys/kernel/tracing)")

// Uprobe is a user probe: the kernel stops each recorded task that runs
// the instruction at Offset in the file Path and writes a sample of it
// into its CPU's ring of probes (a uprobe), or does so when the function
// that starts there returns (a uretprobe). A probe is placed on the file's
// inode, so it hits whatever mapping of the file the recorded tasks run,
// in any mount namespace. A probe hits the tasks it is opened for and
// the threads and processes they create after (see uprobeDefs).
type Uprobe struct {
	// Path is the file as this process opens it. Use the process's own
	// view of a file it maps (/proc/self/fd/N of the opened file, or
	// /proc/PID/map_files/...) for a file in another mount namespace.
	Path string
	// Offset is the file offset of the probed instruction: for a
	// function's entry, its symbol's value minus its segment's virtual
	// address plus the segment's file offset.
	Offset uint64
	// Return probes the function's returns instead of its entry.
	Return bool
	// Stack records the user part of the callchain with each hit.
	Stack bool
	// CallSite copies the 8 bytes at the user stack pointer with each
	// hit into [Sample.Stack]: at a function's entry, its return address,
	// the call site. The kernel's callchain cannot give it: its
	// frame-pointer walk starts at the caller's frame, whose return
	// address is the caller's caller. A probe's samples have no
	// registers ([Sample.Regs] is empty).
	CallSite bool
	// MainThread opens the probe on the main threads (tid == pid) of a
	// [Processes] target only; tasks those create inherit it. Other
	// targets open it on every task, as the main event.
	MainThread bool
}

// String describes the probe for errors: "uretprobe PATH+0xOFF".
func (u Uprobe) String() string {
	kind := "uprobe"
	if u.Return {
		kind = "uretprobe"
	}
	return fmt.Sprintf("%s %s+%#x", kind, u.Path, u.Offset)
}

// uprobeAttr builds the attributes of probe u, defined in tracefs as
// tracepoint id, with the layout of uprobeFormat, inherited, for one task
// on one CPU, waking the reader once wakeup bytes are pending.
func (s *settings) uprobeAttr(u Uprobe, id uint64, onExec bool, wakeup int) unix.PerfEventAttr {
	a := s.tracepointAttr(id, u.Stack, true, false, onExec)
	a.Bits |= attrWatermark
	a.Wakeup = uint32(wakeup)
	f := s.uprobeFormat(u)
	a.Sample_type, a.Sample_regs_user = f.SampleType, 0
	a.Sample_stack_user = 0
	if u.CallSite {
		a.Sample_stack_user = 8
	}
	return a
}

// uprobeFormat is the layout of probe u's samples: the main event's
// without its registers, with a callchain only for [Uprobe.Stack] and a
// user stack (the 8 bytes of the call site) only for [Uprobe.CallSite].
// Each field costs every hit: copying the 17 registers of x86-64 cost a
// microsecond, a fifth of the hit, on a VM, and even an empty user stack
// (the field's size, 0) about a quarter of a microsecond (perf's own
// probes take neither). The probes of a ring may so differ in layout:
// the reader finds each sample's by its identifier (see Reader.formatOf).
func (s *settings) uprobeFormat(u Uprobe) Format {
	f := s.format()
	f.SampleType &^= sampleRegsUser | sampleRaw | sampleStackUser | sampleCallchain
	if u.Stack {
		f.SampleType |= sampleCallchain
	}
	if u.CallSite {
		f.SampleType |= sampleStackUser
	}
	f.RegsUser = 0
	return f
}

// openUprobes opens every probe of s (defined in tracefs as defs) for
// each task of pids (isMain tells a process's main thread) on each CPU of
// cpus, inherited, and records their ids in res. A CPU's probes share a
// ring of their own, of the main rings' size, apart from the samples'
// ring: a hot function's hits do not crowd out the samples.
//
// The kernel runs one consumer per defined probe, which filters on the
// tasks of its events, however many events (tasks and CPUs) it has.
func (s *settings) openUprobes(res *resources, defs *uprobeDefs, pids, cpus []int, pageSize int, isMain func(int) bool, canSkipTask, onExec bool) error {
	pages := s.RingPages
	gone := make(map[int]bool) // tasks that exited before their probes were opened
cpus:
	for _, cpu := range cpus {
		owner := -1
		for _, pid := range pids {
			for i, u := range s.Uprobes {
				if gone[pid] || u.MainThread && !isMain(pid) {
					continue
				}
				attr := s.uprobeAttr(u, defs.ids[i], onExec, pages*pageSize/4)
				fd, err := unix.PerfEventOpen(&attr, pid, cpu, -1, unix.PERF_FLAG_FD_CLOEXEC)
				switch {
				case errors.Is(err, unix.ENODEV) && owner < 0:
					continue cpus // CPU went offline
				case errors.Is(err, unix.ESRCH) && canSkipTask:
					gone[pid] = true
					continue
				case errors.Is(err, unix.EACCES), errors.Is(err, unix.EPERM):
					return fmt.Errorf("open %v for pid %d on cpu %d (user probes need root or CAP_PERFMON): %w", u, pid, cpu, err)
				case err != nil:
					return fmt.Errorf("open %v for pid %d on cpu %d: %w", u, pid, cpu, err)
				}
				res.fds = append(res.fds, fd)
				if owner < 0 {
					rg, err := mapRing(cpu, fd, pageSize, pages)
					if err != nil {
						return fmt.Errorf("ring of the probes on cpu %d: %w", cpu, err)
					}
					res.rings = append(res.rings, rg)
					res.probeRings++
					owner = fd
				} else if err := unix.IoctlSetInt(fd, unix.PERF_EVENT_IOC_SET_OUTPUT, owner); err != nil {
					return fmt.Errorf("redirect %v of pid %d on cpu %d: %w", u, pid, cpu, err)
				}
				id, err := unix.PerfEventID(fd)
				if err != nil {
					return fmt.Errorf("id of %v of pid %d on cpu %d: %w", u, pid, cpu, err)
				}
				if res.uprobes == nil {
					res.uprobes = make(map[uint64]int)
					res.uprobeFormats = make([]Format, len(s.Uprobes))
					for j, u := range s.Uprobes {
						res.uprobeFormats[j] = s.uprobeFormat(u)
					}
				}
				res.uprobes[id] = i
			}
		}
	}
	return nil
}

// Uprobe reports which of [Options.Uprobes] (its index) wrote sample s,
// or false when s is not a probe's.
func (r *Reader) Uprobe(s *Sample) (int, bool) {
	i, ok := r.res.uprobes[s.Identifier]
	return i, ok
}

// ErrNoUprobePermission is returned by [UprobesUsable] to a process that
// is not root: defining probes in tracefs and opening them wants root.
var ErrNoUprobePermission = errors.New("user probes need root")

// UprobesUsable returns nil when this process can open [Uprobe]s: a
// tracefs with uprobe_events is mounted ([ErrNoUprobes]) and the process
// is root (else [ErrNoUprobePermission]).
func UprobesUsable() error {
	if _, err := uprobeEventsFile(); err != nil {
		return err
	}
	if os.Geteuid() != 0 {
		return ErrNoUprobePermission
	}
	return nil
}
