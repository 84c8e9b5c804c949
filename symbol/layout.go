package symbol

import (
	"debug/elf"
	"encoding/binary"
)

// ExecRange returns the link-time addresses [lo, hi) that the executable
// PT_LOAD segments span: the file's code. ok is false when it has no
// executable segment.
func (f *File) ExecRange() (lo, hi uint64, ok bool) {
	for _, p := range f.elf.Progs {
		if p.Type != elf.PT_LOAD || p.Flags&elf.PF_X == 0 || p.Memsz == 0 {
			continue
		}
		end := p.Vaddr + p.Memsz
		if end < p.Vaddr {
			continue // wraps: not a segment a loader maps
		}
		if !ok || p.Vaddr < lo {
			lo = p.Vaddr
		}
		if !ok || end > hi {
			hi = end
		}
		ok = true
	}
	return lo, hi, ok
}

// AddrSize returns the size in bytes of an address of the file's
// machine: 8 for ELFCLASS64, 4 for ELFCLASS32.
func (f *File) AddrSize() int {
	if f.elf.Class == elf.ELFCLASS32 {
		return 4
	}
	return 8
}

// ByteOrder returns the byte order of the file's machine.
func (f *File) ByteOrder() binary.ByteOrder { return f.elf.ByteOrder }
