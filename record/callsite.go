package record

import (
	"runtime"

	"nsprof/capture"
	"nsprof/unwind"
)

// trimCallers drops from the outer end of a sample's user stack the
// addresses that cannot be return addresses, and returns the shortened
// callchain (addrs itself, resliced).
//
// A frame-pointer walk stops only where it finds a zero or an unreadable
// frame pointer. Through code built without frame pointers (most of a
// distribution's libraries, a static glibc program's startup) it goes on
// past the outermost frame it can follow and reads whatever the stack
// holds there. Perf and Sysprof show those values as the roots of the
// stacks, "[unknown]" or named as whatever function precedes them:
//   - values no code address can have: a stack protector's canary
//     (capture.ImpossibleReturn), and counts, sizes and flags, below
//     minCodeAddr;
//   - addresses in no executable mapping of the process: stack and heap
//     pointers, data of a library (most of libpython's stacks end so);
//   - function pointers, named as the function before them
//     (`register_tm_clones` over `__libc_start_call_main` in every stack
//     of a static program). A return address follows a call instruction,
//     so an address in a mapped file that is aligned as functions are (16
//     bytes) and whose code does not end in a call is dropped.
//
// A value in the context markers' range after the user marker ends the
// stack: it was read off the stack, and would turn the user addresses
// after it into kernel frames.
//
// Trimming stops at the first address that may be a return address, or
// that cannot be checked: a JIT address, an address in anonymous executable
// memory, or in a file the symbolizer could not open, and any address of
// a process whose mappings it does not know. The first user address is
// where the thread was, and is kept.
//
// The alignment keeps the return addresses that runtimes make up on
// purpose, which follow no call: Go starts every goroutine returning to
// runtime.goexit+1, after a NOP, which Go's own profiles show as the root.
// A few made-up ones are function starts and go: glibc's __start_context
// (makecontext) and __restore_rt (signal handlers) when a stack ends
// there. A mapping whose MMAP record was lost looks like no mapping, so an
// outermost frame in it would go too.
//
// Only x86-64 code is checked for calls; elsewhere the other rules
// apply.
func (s *symbolizer) trimCallers(pid int, addrs []uint64) []uint64 {
	user := -1 // the index of the user context marker
	for i, a := range addrs {
		if a == capture.ContextUser {
			user = i
			break
		}
	}
	if user < 0 {
		return addrs
	}
	// The kernel writes no context marker after the user one: such a
	// value was read off the user stack (-128 is PERF_CONTEXT_KERNEL's)
	// and would make what follows look like kernel frames. The walk is
	// past the stack's frames there; it ends the stack.
	for i := user + 1; i < len(addrs); i++ {
		if capture.IsContext(addrs[i]) {
			addrs = addrs[:i]
			break
		}
	}
	p := s.lookup(pid)
	for len(addrs) > user+2 && p.notReturn(addrs[len(addrs)-1], true) {
		addrs = addrs[:len(addrs)-1]
	}
	return addrs
}

// trimReturns is trimCallers for an allocation stack, which holds return
// addresses only (no context markers, no sampled address) and keeps at
// least one. The preload library's walk is read from its ring, out of
// order with perf's MMAP records, so an address in no known mapping may
// be in one just made: it stays.
func (s *symbolizer) trimReturns(pid int, addrs []uint64) []uint64 {
	p := s.lookup(pid)
	for len(addrs) > 1 && p.notReturn(addrs[len(addrs)-1], false) {
		addrs = addrs[:len(addrs)-1]
	}
	return addrs
}

// notReturn reports whether a, an address of p's user stack, cannot be a
// return address; false when that cannot be told. p may be nil. unmapped
// says whether an address in none of p's executable mappings counts as
// none: only when the mappings are read in time order with the stacks.
func (p *symProc) notReturn(a uint64, unmapped bool) bool {
	switch {
	case capture.ImpossibleReturn(a) || a < minCodeAddr:
		return true
	case p == nil || a >= capture.JITMapMark || len(p.maps)+len(p.other) == 0:
		return false // JIT addresses, [vsyscall]; or no mappings known
	}
	m := p.find(a)
	if m == nil {
		if !unmapped {
			return false
		}
		for _, o := range p.other {
			if a >= o.start && a < o.end {
				return false
			}
		}
		return true // in no executable mapping
	}
	return runtime.GOARCH == "amd64" && a%funcAlign == 0 && m.obj.notAfterCall(a-m.start+m.off)
}

// minCodeAddr is where code can start: Linux maps nothing below
// vm.mmap_min_addr, 64 KiB by default, and programs load far above it
// (0x400000 for x86-64 executables that are not position-independent).
// Smaller values on a stack are counts, sizes and flags.
const minCodeAddr = 0x10000

// funcAlign is the alignment x86-64 compilers give functions at -O2, and
// so the alignment of the function pointers a walk past the outermost
// frame finds.
const funcAlign = 16

// notAfterCall reports whether the code before file offset off of o does
// not end in a call instruction; false when it cannot be read.
func (o *symObj) notAfterCall(off uint64) bool {
	r := o.reader()
	if r == nil || off == 0 {
		return false
	}
	if v, ok := o.afterCall[off]; ok {
		return !v
	}
	n := min(off, unwind.MaxCallLen)
	b := make([]byte, n)
	if _, err := r.ReadAt(b, int64(off-n)); err != nil {
		return false // not cached: a read error says nothing of the code
	}
	v := unwind.AfterCall(b)
	if o.afterCall == nil {
		o.afterCall = make(map[uint64]bool)
	}
	o.afterCall[off] = v
	return !v
}
