package perf

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"unsafe"

	"nsprof/internal/unix"
)

// UprobePMUDir is the sysfs directory of the kernel's uprobe PMU, which
// perf_event_open uses to place user probes without tracefs.
var UprobePMUDir = "/sys/bus/event_source/devices/uprobe"

// ErrNoUprobes is returned, wrapped, when the kernel has no uprobe PMU
// (CONFIG_UPROBE_EVENTS off, or a kernel older than 4.17).
var ErrNoUprobes = errors.New("the kernel has no uprobe PMU (CONFIG_UPROBE_EVENTS, Linux 4.17)")

// Uprobe is a user probe: the kernel stops each recorded task that runs
// the instruction at Offset in the file Path and writes a sample of it
// into the task's ring (a uprobe), or does so when the function that
// starts there returns (a uretprobe). A probe is placed on the file's
// inode, so it hits whatever mapping of the file the recorded tasks run,
// in any mount namespace. A probe hits the tasks it is opened for, not
// the tasks they create after (see uprobeAttr).
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
	// [Processes] target only; threads those create inherit it. Other
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

// uprobePMU is the uprobe PMU's perf type and the config bit that makes a
// probe a return probe.
type uprobePMU struct {
	typ    uint32
	retBit uint64
}

// lookupUprobePMU reads the uprobe PMU's type and the "retprobe" format
// bit (format/retprobe: "config:N") from sysfs, once.
var lookupUprobePMU = sync.OnceValues(func() (uprobePMU, error) {
	b, err := os.ReadFile(filepath.Join(UprobePMUDir, "type"))
	if errors.Is(err, os.ErrNotExist) {
		return uprobePMU{}, ErrNoUprobes
	}
	if err != nil {
		return uprobePMU{}, fmt.Errorf("uprobe PMU: %w", err)
	}
	typ, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 32)
	if err != nil {
		return uprobePMU{}, fmt.Errorf("uprobe PMU type %q: %w", strings.TrimSpace(string(b)), err)
	}
	f := filepath.Join(UprobePMUDir, "format", "retprobe")
	b, err = os.ReadFile(f)
	if err != nil {
		return uprobePMU{}, fmt.Errorf("uprobe PMU: %w", err)
	}
	bit, err := parseConfigBit(string(b))
	if err != nil {
		return uprobePMU{}, fmt.Errorf("%s: %w", f, err)
	}
	return uprobePMU{typ: uint32(typ), retBit: 1 << bit}, nil
})

// parseConfigBit parses a one-bit PMU format field, "config:N".
func parseConfigBit(s string) (uint, error) {
	v, ok := strings.CutPrefix(strings.TrimSpace(s), "config:")
	if !ok {
		return 0, fmt.Errorf("format %q is not config:N", strings.TrimSpace(s))
	}
	n, err := strconv.ParseUint(v, 10, 6)
	if err != nil {
		return 0, fmt.Errorf("format %q is not config:N", strings.TrimSpace(s))
	}
	return uint(n), nil
}

// uprobeAttr builds the attributes of probe u, with the main event's
// sample layout as a tracepoint has it (see tracepointAttr), for one task
// on any CPU, waking the reader once wakeup bytes are pending. path must
// stay alive until perf_event_open returns: the attributes point at it.
func (s *settings) uprobeAttr(u Uprobe, path []byte, onExec bool, wakeup int) unix.PerfEventAttr {
	a := s.tracepointAttr(0, u.Stack, true, false, onExec)
	a.Type, a.Config = s.uprobe.typ, 0
	// Not inherited: the kernel sets up a child's copy of a uprobe PMU
	// event by reading the path at Ext1 again, in the task that forks or
	// creates a thread, where the pointer means nothing; the fork or
	// pthread_create then fails with EFAULT.
	a.Bits &^= attrInherit
	a.Bits |= attrWatermark
	a.Wakeup = uint32(wakeup)
	if u.Return {
		a.Config = s.uprobe.retBit
	}
	// A layout of its own (see uprobeFormat): no registers, and at most
	// the call site of the stack.
	f := s.uprobeFormat()
	a.Sample_type, a.Sample_regs_user = f.SampleType, 0
	a.Sample_stack_user = 0
	if u.CallSite {
		a.Sample_stack_user = 8
	}
	a.Ext1 = uint64(uintptr(unsafe.Pointer(&path[0])))
	a.Ext2 = u.Offset
	return a
}

// uprobeFormat is the layout of the probes' samples: the main event's
// without its registers, and with a user stack (of 0 bytes, or the 8 of
// a call site) whether the main event copies stacks or not. Copying the
// 17 registers of x86-64 cost each hit a microsecond, a fifth of the
// hit, on a VM (perf's own probes take no registers).
func (s *settings) uprobeFormat() Format {
	f := s.format()
	f.SampleType &^= sampleRegsUser | sampleRaw
	f.SampleType |= sampleStackUser
	f.RegsUser = 0
	return f
}

// uprobeRingPages returns the size of the ring of one task's probes when
// tasks tasks are probed: the main rings' size, divided among the tasks
// down to 64 pages (256 KiB).
func (s *settings) uprobeRingPages(tasks int) int {
	pages := s.RingPages
	for pages > 64 && pages*tasks > 4*s.RingPages {
		pages /= 2
	}
	return pages
}

// openUprobes opens every probe of s for task pid (isMain: pid is a
// process's main thread; tasks: how many tasks are probed) on any CPU,
// into a ring of the task's own, and records their ids in res.
//
// A probe is a consumer of the kernel's uprobe of its own: each hit runs
// every consumer of the probed address, which filters on the process.
// One event per task, rather than one per task and CPU as the sampling
// events are opened, keeps that to one consumer a task, however many
// CPUs there are; such an event cannot share a CPU's ring, so the task's
// probes share a ring of their own.
func (s *settings) openUprobes(res *resources, pid, pageSize, tasks int, isMain, onExec bool) error {
	owner := -1
	pages := s.uprobeRingPages(tasks)
	for i, u := range s.Uprobes {
		if u.MainThread && !isMain {
			continue
		}
		path := append([]byte(u.Path), 0)
		attr := s.uprobeAttr(u, path, onExec, pages*pageSize/4)
		fd, err := unix.PerfEventOpen(&attr, pid, -1, -1, unix.PERF_FLAG_FD_CLOEXEC)
		runtime.KeepAlive(path)
		switch {
		case errors.Is(err, unix.EACCES), errors.Is(err, unix.EPERM):
			return fmt.Errorf("open %v for pid %d (user probes need root or CAP_PERFMON): %w", u, pid, err)
		case err != nil:
			return fmt.Errorf("open %v for pid %d: %w", u, pid, err)
		}
		res.fds = append(res.fds, fd)
		if owner < 0 {
			rg, err := mapRing(-1, fd, pageSize, pages)
			if err != nil {
				return fmt.Errorf("ring of the probes of pid %d: %w", pid, err)
			}
			res.rings = append(res.rings, rg)
			res.taskRings++
			res.uprobeFormat = s.uprobeFormat()
			owner = fd
		} else if err := unix.IoctlSetInt(fd, unix.PERF_EVENT_IOC_SET_OUTPUT, owner); err != nil {
			return fmt.Errorf("redirect %v of pid %d: %w", u, pid, err)
		}
		id, err := unix.PerfEventID(fd)
		if err != nil {
			return fmt.Errorf("id of %v of pid %d: %w", u, pid, err)
		}
		if res.uprobes == nil {
			res.uprobes = make(map[uint64]int)
		}
		res.uprobes[id] = i
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
// is not root: the uprobe PMU wants CAP_PERFMON.
var ErrNoUprobePermission = errors.New("user probes need root or CAP_PERFMON")

// UprobesUsable returns nil when this process can open [Uprobe]s: the
// kernel has the uprobe PMU ([ErrNoUprobes]) and the process is root
// (else [ErrNoUprobePermission]; a process given CAP_PERFMON alone is
// taken for one without it).
func UprobesUsable() error {
	if _, err := lookupUprobePMU(); err != nil {
		return err
	}
	if os.Geteuid() != 0 {
		return ErrNoUprobePermission
	}
	return nil
}
