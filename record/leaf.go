package record

import (
	"fmt"
	"slices"
	"time"

	"nsprof/capture"
	"nsprof/perf"
	"nsprof/unwind"
)

// leafCallers completes frame-pointer callchains (Options.LeafStack) with
// the one caller the kernel's walk skips.
//
// The walk starts from the sampled instruction, then follows rbp. A
// function that has not set up its frame pointer where the sample caught
// it leaves rbp pointing at its caller's frame, so the first return
// address the walk finds is the caller's, and the caller itself is
// missing: every sample in a Go leaf function (Go sets up no frame in
// functions that call nothing), in a library built without frame pointers
// (glibc's memcpy, strlen and system-call wrappers), and in any function's
// prologue or epilogue shows its grandparent as its parent. One step of
// CFI unwinding (or of Go's pclntab) from the sample's user registers,
// over a small copy of the top of its stack, finds the real caller; it is
// inserted when it is not the walk's first return address already.
type leafCallers struct {
	u    *dwarfUnwinder
	step []uint64
	buf  []uint64
	// Counts, for the log: stacks completed, stacks the walk had right,
	// and stacks the step could not tell (no CFI for the code, the
	// return address beyond the copy, an implausible result).
	inserted, agreed, unknown uint64
	// spent estimates the time the steps took, tables not counted: one
	// call in leafTimed is timed (reading the clock costs as much as a
	// step on some VMs).
	spent time.Duration
	calls uint64
}

// leafTimed is how often leafCallers times a call.
const leafTimed = 16

// complete returns addrs, a frame-pointer callchain of s with its zeros
// dropped, with the sampled function's caller inserted after the user IP
// when the walk skipped it. The result is valid until the next call.
func (l *leafCallers) complete(s *perf.Sample, addrs []uint64) []uint64 {
	user := -1
	for i := len(addrs) - 1; i >= 0; i-- {
		if capture.IsContext(addrs[i]) {
			if addrs[i] == capture.ContextUser {
				user = i
			}
			break
		}
	}
	if user < 0 || user+1 >= len(addrs) {
		return addrs // a kernel thread's sample: no user part
	}
	if l.calls++; l.calls%leafTimed == 1 {
		start, loading := time.Now(), l.u.loading
		defer func() { l.spent += leafTimed * (time.Since(start) - (l.u.loading - loading)) }()
	}
	var next uint64 // the walk's first return address
	if user+2 < len(addrs) {
		next = addrs[user+2]
	}
	ip, callers, ok := l.callers(s, next)
	if !ok || addrs[user+1] != ip {
		l.unknown++
		return addrs
	}
	if callers[0] == next {
		l.agreed++
		return addrs
	}
	// The walk may have skipped more than one frame: a system-call
	// wrapper called by another function without a frame (nanosleep
	// by sleep, clock_nanosleep by nanosleep), as every off-CPU stack
	// taken at a system call shows. The frames CFI finds before the
	// walk's first return address are inserted; when the walk's is not
	// among them, only the first.
	n := 1
	if k := slices.Index(callers, next); k > 0 && next != 0 {
		n = k
	}
	for i, c := range callers[:n] {
		if l.u.mapper.p.notReturn(c, true) { // pid's, as callers left it
			n = i
			break
		}
	}
	if n == 0 {
		l.unknown++
		return addrs
	}
	l.inserted++
	l.buf = append(append(append(l.buf[:0], addrs[:user+2]...), callers[:n]...), addrs[user+2:]...)
	return l.buf
}

// leafTracepointMaxStack is the most stack the leaf step copies at a
// tracepoint hit (a context switch of Options.OffCPU, a system call of
// Options.Blocking): the task is in a system call, below libc wrappers
// whose frames are small. glibc 2.36's blocking wrappers (read, write,
// poll, epoll_wait, recv, send, accept, wait4, clock_nanosleep) have
// their return address within 48 bytes of the stack pointer at the
// system call; the offcpu fixture's fixture_block, under nanosleep and
// clock_nanosleep, needs 128 (TestOffCPUFixture fails with 64), and so do
// Python's threads waiting on a lock (8 % of their stacks left without
// their caller with 64, none with 128, as with 256) and Go's runtime
// (37 % with 64, 2 % with 128 or 256). Each byte is copied at every
// switch: 256 cost the ping-pong bench about 2 % of the workload's time
// more (PRIO=10 PIN=0, against 128).
const leafTracepointMaxStack = 128

// leafTracepointStack sets the stack copy of the tracepoint hits with
// stacks to at most leafTracepointMaxStack when popts copy stacks for
// the leaf step (not to unwind whole stacks, which needs all of it).
func leafTracepointStack(popts *perf.Options) {
	if popts.UserStack > 0 && !popts.ExcludeUserCallchain {
		popts.TracepointStack = min(popts.UserStack, leafTracepointMaxStack)
	}
}

// leafSteps is the most frames of CFI unwinding leafCallers takes from
// the sampled instruction.
const leafSteps = 4

// callers unwinds up to leafSteps frames from the sample's user
// registers and stack copy: the user IP and the return addresses found,
// at least one. It stops at next, the walk's first return address (0 for
// none): complete needs no frame past it, and each step costs a table
// lookup (over a Go compile loop most samples agree with the walk at the
// first step or the second, and the steps past them were half of the
// recorder's unwinding).
func (l *leafCallers) callers(s *perf.Sample, next uint64) (ip uint64, callers []uint64, ok bool) {
	u := l.u
	ip, ok1 := u.format.UserReg(s, perf.RegX86IP)
	sp, ok2 := u.format.UserReg(s, perf.RegX86SP)
	bp, _ := u.format.UserReg(s, perf.RegX86BP)
	if !ok1 || !ok2 {
		return 0, nil, false
	}
	u.mapper.use(int(s.PID), int64(s.Time))
	l.step, _ = unwind.UnwindTo(l.step[:0], unwind.Regs{IP: ip, SP: sp, BP: bp}, s.Stack, &u.mapper, leafSteps+1, next)
	if len(l.step) < 2 {
		return ip, nil, false
	}
	return ip, l.step[1:], true
}

// leafUnwinder returns the unwinder of the leaf step, nil without one.
func (r *recorder) leafUnwinder() *dwarfUnwinder {
	if r.leaf == nil {
		return nil
	}
	return r.leaf.u
}

// summary describes what the step did, for the log.
func (l *leafCallers) summary(stackSize int) string {
	n := l.inserted + l.agreed + l.unknown
	if n == 0 {
		return "leaf callers: no user stacks sampled"
	}
	pct := func(k uint64) float64 { return 100 * float64(k) / float64(n) }
	used, loads, _ := l.u.cache.Stats()
	return fmt.Sprintf("leaf callers: %d user stacks, %.1f%% completed with the caller the frame-pointer walk skipped, %.1f%% already complete, %.1f%% undetermined (no CFI, or beyond the %d-byte stack copy: --call-graph fp,SIZE); %.2f us per sample; %d CFI tables read in %.2fs (%s%.1f MB held)",
		n, pct(l.inserted), pct(l.agreed), pct(l.unknown), stackSize,
		float64(l.spent.Nanoseconds())/1e3/float64(n), loads, l.u.loading.Seconds(), l.u.goTables.summary(), float64(used)/1e6)
}
