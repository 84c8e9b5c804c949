package symbol

import (
	"debug/elf"
	"encoding/binary"
)

// rankPLT ranks the names made up for PLT entries below every symbol the
// file itself holds at the same address.
const rankPLT = rankLocal - 1

// Limits on what pltSymbols reads: no linker writes a PLT or a relocation
// table near these sizes, and a hostile header cannot make it read more.
const (
	maxPLTSize   = 16 << 20
	maxRelocSize = 64 << 20
)

// Relocation types of x86-64 that fill a GOT slot with a symbol's address.
const (
	rX86_64GlobDat  = 6 // R_X86_64_GLOB_DAT: the slot of a .plt.got entry
	rX86_64JumpSlot = 7 // R_X86_64_JUMP_SLOT: the slot of a .plt or .plt.sec entry
)

// pltSymbols names the entries of the procedure linkage table of an x86-64
// object "NAME@plt", as perf and objdump do. No symbol table covers them,
// yet a program spends time there: the first call of each imported
// function runs the lazy binder from its PLT entry, and the first touch of
// the GOT page faults there. Each entry of .plt, .plt.sec and .plt.got
// jumps through a GOT slot (jmp *disp(%rip), after an endbr64 and a bnd
// prefix when the object was built for CET or MPX); the dynamic relocation
// that fills that slot names the function. Entries that do not decode so,
// like the lazy binder's header, get no name. Other machines, and files
// that cannot be read, give none.
func (f *File) pltSymbols() (es []entry) {
	defer func() {
		if recover() != nil {
			es = nil
		}
	}()
	if f.elf.Machine != elf.EM_X86_64 || f.elf.Class != elf.ELFCLASS64 {
		return nil
	}
	slots := f.gotSlots()
	if len(slots) == 0 {
		return nil
	}
	for _, s := range f.elf.Sections {
		if s.Type != elf.SHT_PROGBITS || s.Flags&elf.SHF_EXECINSTR == 0 {
			continue
		}
		if s.Name != ".plt" && s.Name != ".plt.sec" && s.Name != ".plt.got" {
			continue
		}
		size := s.Entsize
		if size != 8 && size != 16 {
			size = 16
		}
		data, err := f.sectionData(s, maxPLTSize)
		if err != nil {
			continue
		}
		for off := uint64(0); off+size <= uint64(len(data)); off += size {
			slot, ok := jumpSlot(data[off:off+size], s.Addr+off)
			if !ok {
				continue
			}
			if name, ok := slots[slot]; ok {
				es = append(es, entry{Symbol: Symbol{Name: name + "@plt", Addr: s.Addr + off, Size: size}, rank: rankPLT})
			}
		}
	}
	return es
}

// jumpSlot decodes the indirect jump that starts the PLT entry code, loaded
// at addr, and returns the address of the GOT slot it jumps through.
func jumpSlot(code []byte, addr uint64) (uint64, bool) {
	i := 0
	if len(code) >= 4 && code[0] == 0xf3 && code[1] == 0x0f && code[2] == 0x1e && code[3] == 0xfa {
		i = 4 // endbr64
	}
	if i < len(code) && code[i] == 0xf2 {
		i++ // bnd
	}
	if len(code)-i < 6 || code[i] != 0xff || code[i+1] != 0x25 {
		return 0, false
	}
	disp := int32(binary.LittleEndian.Uint32(code[i+2:]))
	next := addr + uint64(i+6)
	return next + uint64(int64(disp)), true
}

// gotSlots maps the GOT slots filled by the x86-64 object's JUMP_SLOT and
// GLOB_DAT relocations to the names of their symbols in .dynsym.
func (f *File) gotSlots() map[uint64]string {
	var syms []elf.Symbol
	slots := make(map[uint64]string)
	for _, s := range f.elf.Sections {
		if s.Type != elf.SHT_RELA || s.Flags&elf.SHF_ALLOC == 0 {
			continue
		}
		data, err := f.sectionData(s, maxRelocSize)
		if err != nil {
			continue
		}
		if syms == nil {
			if syms, err = f.rawSymbols(elf.SHT_DYNSYM); err != nil || len(syms) == 0 {
				return nil
			}
		}
		for off := 0; off+24 <= len(data); off += 24 {
			rOff := binary.LittleEndian.Uint64(data[off:])
			info := binary.LittleEndian.Uint64(data[off+8:])
			typ, sym := uint32(info), info>>32
			if typ != rX86_64JumpSlot && typ != rX86_64GlobDat {
				continue
			}
			// DynamicSymbols leaves out the null symbol at index 0.
			if sym == 0 || sym > uint64(len(syms)) || syms[sym-1].Name == "" {
				continue
			}
			slots[rOff] = syms[sym-1].Name
		}
	}
	return slots
}
