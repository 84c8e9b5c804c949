package analyze

import (
	"strings"

	"nsprof/capture"
)

// minCodeAddr is where code can start: Linux maps nothing below
// vm.mmap_min_addr, 64 KiB by default. Smaller values on a stack are
// counts, sizes and flags.
const minCodeAddr = 0x10000

// trimJunk drops from the outer end of every stack's user frames the
// values a frame-pointer walk reads past the outermost frame, through
// code built without frame pointers: values below minCodeAddr, and when
// unmapped is set, addresses in none of the process's mappings or in its
// [heap] or [stack] (pointers to data; Sysprof records those mappings
// too); either only when the capture's symbol bundle does not
// name the address.
// nsprof record already trims its own stacks, with the
// code at hand (record/callsite.go); this is for captures other recorders
// wrote, such as sysprof-cli's, whose walks end in "[unknown] 0x1" roots.
// The innermost user frame, where the thread was, is kept, as are JIT
// addresses that JITMAP frames define and the frames of processes with
// no known mapping.
//
// Stacks are trimmed in place: two stacks may become equal, which every
// view handles (they sum per function, not per stack).
func (p *Profile) trimJunk(frames []frameKey, unmapped bool) {
	named := func(f *frameKey) bool { // the recorder named it: code
		if p.Bundle == nil {
			return false
		}
		s, ok := p.Bundle.Lookup(f.PID, f.Addr-1)
		return ok && s.Name != "" && !sysprofPlaceholder(s.Name)
	}
	junk := func(f *frameKey) bool {
		if f.Kernel || !f.Caller {
			return false
		}
		if f.Addr < minCodeAddr {
			return !named(f)
		}
		if capture.IsJIT(f.Addr) || f.Addr >= capture.JITMapMark {
			// Above every user address space: a JIT address when a
			// JITMAP frame defines it (or the vsyscall page), else a
			// value read off the stack.
			_, jit := p.JIT[f.Addr]
			return unmapped && !jit && !named(f) && !vsyscall(f.Addr)
		}
		if !unmapped {
			return false
		}
		pr := p.procIndex[f.PID]
		if pr == nil || len(pr.Maps) == 0 {
			return false
		}
		if m := p.Mapping(f.PID, f.Addr); m != nil && m.File != "[heap]" && !strings.HasPrefix(m.File, "[stack") {
			return false
		}
		return !named(f) // code whose MAP frame is missing, when named
	}
	verdict := make([]int8, len(frames)) // 0 undecided, 1 junk, -1 not
	isJunk := func(id FrameID) bool {
		if verdict[id] == 0 {
			verdict[id] = -1
			if junk(&frames[id]) {
				verdict[id] = 1
			}
		}
		return verdict[id] > 0
	}
	out := 0
	lo := p.stackStart[0]
	for i := 0; i < p.NumStacks(); i++ {
		hi := p.stackStart[i+1]
		st := p.stackFrames[lo:hi]
		n := len(st)
		for n > 0 && isJunk(st[n-1]) && !firstUser(frames, st[:n-1]) {
			n--
		}
		copy(p.stackFrames[out:], st[:n]) // out <= lo: never ahead of the reads
		out += n
		lo = hi
		p.stackStart[i+1] = int32(out)
	}
	p.stackFrames = p.stackFrames[:out]
}

// firstUser reports whether rest (the frames inside a user frame) holds
// no user frame: the frame after it is the innermost user frame, kept.
func firstUser(frames []frameKey, rest []FrameID) bool {
	for _, id := range rest {
		if !frames[id].Kernel {
			return false
		}
	}
	return true
}

// vsyscall reports whether addr is in x86-64's legacy vsyscall page.
func vsyscall(addr uint64) bool { return addr >= 0xffffffffff600000 && addr < 0xffffffffff601000 }

// sysprofPlaceholder reports whether name is Sysprof's name for an
// address it found no symbol for: "In file PATH", or "PATH: inode
// mismatch" when the file at PATH was not the one mapped (memfd code,
// such as a GTK 4 program's).
func sysprofPlaceholder(name string) bool {
	return strings.HasPrefix(name, "In file ") || strings.HasPrefix(name, "In File ") ||
		strings.HasPrefix(name, "/") && strings.HasSuffix(name, ": inode mismatch")
}
