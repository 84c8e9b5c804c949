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
// frame pointer. In code without frame pointers, a static glibc program's
// startup for one, it goes on past the outermost real frame and reads
// whatever the stack holds there. Perf and Sysprof show those values as
// the root of every stack: a stack protector's canary, which no mapping
// holds (capture.ImpossibleReturn), and function pointers, which are named
// as the function before them (`register_tm_clones` over
// `__libc_start_call_main` in every stack of a static program). A return
// address follows a call instruction, so an address in a mapped file that
// is aligned as functions are (16 bytes) and whose code does not end in a
// call before it is dropped, and so is an impossible one. The walk stops
// at the first address that may be a return address, or that lies outside
// the files the symbolizer holds open (JIT code, a file it could not
// open). The first user address is where the thread was, and is kept.
//
// The alignment keeps the return addresses that runtimes make up on
// purpose, which follow no call: Go starts every goroutine returning to
// runtime.goexit+1, after a NOP, which Go's own profiles show as the root.
// A few made-up ones are function starts and go: glibc's __start_context
// (makecontext) and __restore_rt (signal handlers) when a stack ends there.
//
// Only x86-64 code is checked; on other machines only impossible
// addresses are dropped.
func (s *symbolizer) trimCallers(pid int, addrs []uint64) []uint64 {
	user := -1 // the index of the user context marker
	for i := len(addrs) - 1; i >= 0; i-- {
		if capture.IsContext(addrs[i]) {
			if addrs[i] == capture.ContextUser {
				user = i
			}
			break
		}
	}
	if user < 0 {
		return addrs
	}
	p := s.procs[pid]
	for len(addrs) > user+2 {
		a := addrs[len(addrs)-1]
		if !capture.ImpossibleReturn(a) {
			if p == nil || runtime.GOARCH != "amd64" {
				break
			}
			m := p.find(a)
			if a%funcAlign != 0 || m == nil || !m.obj.notAfterCall(a-m.start+m.off) {
				break
			}
		}
		addrs = addrs[:len(addrs)-1]
	}
	return addrs
}

// funcAlign is the alignment x86-64 compilers give functions at -O2, and
// so the alignment of the function pointers a walk past the outermost
// frame finds.
const funcAlign = 16

// notAfterCall reports whether the code before file offset off of o does
// not end in a call instruction; false when it cannot be read.
func (o *symObj) notAfterCall(off uint64) bool {
	if o.f == nil || off == 0 {
		return false
	}
	if v, ok := o.afterCall[off]; ok {
		return !v
	}
	n := min(off, unwind.MaxCallLen)
	b := make([]byte, n)
	if _, err := o.f.ReadAt(b, int64(off-n)); err != nil {
		return false // not cached: a read error says nothing of the code
	}
	v := unwind.AfterCall(b)
	if o.afterCall == nil {
		o.afterCall = make(map[uint64]bool)
	}
	o.afterCall[off] = v
	return !v
}
