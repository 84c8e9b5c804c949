package symbol

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
)

// rankPLT ranks the names made up for PLT entries below every symbol the
// file itself holds at the same address.
const rankPLT = rankLocal - 1

// Limits on what pltSymbols reads: no linker writes a PLT, or a
// relocation, dynamic symbol or string table, near these sizes, and a
// hostile header cannot make it read more.
const (
	maxPLTSize     = 16 << 20
	maxDynamicSize = 64 << 20
)

// Relocation types of x86-64 that fill a GOT slot a PLT entry jumps
// through.
const (
	rX86_64GlobDat   = 6  // R_X86_64_GLOB_DAT: a symbol's address (.plt.got)
	rX86_64JumpSlot  = 7  // R_X86_64_JUMP_SLOT: a symbol's address (.plt, .plt.sec)
	rX86_64Irelative = 37 // R_X86_64_IRELATIVE: what the IFUNC resolver at the addend returns
)

// maxPLTEntry is the size of the largest PLT entry of x86-64 (lazy .plt,
// .plt.sec, and .plt.got under IBT); .plt.got and the PLT of IFUNCs in a
// static executable use 8 bytes.
const maxPLTEntry = 16

// pltSymbols names the entries of the procedure linkage table of an x86-64
// object "NAME@plt", as perf does. No symbol table covers them, yet a
// program spends time there: the first call of each imported function
// runs the lazy binder from its PLT entry, the first jump through a GOT
// page faults there, and a loop calling a short library function spends a
// good share of its samples on the jump.
//
// Each entry of .plt, .plt.sec and .plt.got jumps through a GOT slot (jmp
// *disp(%rip), after an endbr64 and a bnd prefix when the object was built
// for CET or MPX), and the relocation that fills the slot names the
// function: JUMP_SLOT and GLOB_DAT by their symbol in .dynsym, IRELATIVE
// (the entries of IFUNCs such as memcpy in a static executable, or local
// to a library) by the IFUNC symbol of named whose resolver its addend is.
// Entries are looked for every 8 bytes and kept only when they jump
// through such a slot, which covers every layout whatever the section's
// entry size says. Entries that do not decode so, like the lazy binder's
// header, get no name. Other machines, and files that cannot be read,
// give none.
func (f *File) pltSymbols(named []entry) (es []entry) {
	defer func() {
		if recover() != nil {
			es = nil
		}
	}()
	if f.elf.Machine != elf.EM_X86_64 || f.elf.Class != elf.ELFCLASS64 {
		return nil
	}
	slots := f.gotSlots(named)
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
		size := uint64(maxPLTEntry)
		if s.Entsize == 8 {
			size = 8
		}
		data, err := f.sectionData(s, maxPLTSize)
		if err != nil {
			continue
		}
		first := len(es)
		for off := uint64(0); off < uint64(len(data)); off += 8 {
			addr := s.Addr + off
			slot, ok := jumpSlot(data[off:min(off+maxPLTEntry, uint64(len(data)))], addr)
			if !ok {
				continue
			}
			name, ok := slots[slot]
			if !ok {
				continue
			}
			if n := len(es); n > first && es[n-1].End() > addr {
				es[n-1].Size = addr - es[n-1].Addr
			}
			es = append(es, entry{Symbol: Symbol{Name: name + "@plt", Addr: addr, Size: min(size, uint64(len(data))-off)}, rank: rankPLT})
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

// gotSlots maps the GOT slots filled by the x86-64 object's JUMP_SLOT,
// GLOB_DAT and IRELATIVE relocations to the names of the functions they
// hold: the relocation's symbol in .dynsym, or for IRELATIVE the IFUNC of
// named whose resolver is at the addend. It reads .rela.plt, and the other
// dynamic relocation tables only when there is a .plt.got whose slots
// they fill: in a large library .rela.dyn holds hundreds of thousands of
// relocations of data.
func (f *File) gotSlots(named []entry) map[uint64]string {
	pltGot := f.elf.Section(".plt.got") != nil
	type reloc struct {
		slot, addend uint64
		sym          uint32
	}
	var relocs []reloc
	want := make(map[uint32]string)
	for _, s := range f.elf.Sections {
		if s.Type != elf.SHT_RELA || s.Flags&elf.SHF_ALLOC == 0 || s.Name != ".rela.plt" && !pltGot {
			continue
		}
		data, err := f.sectionData(s, maxDynamicSize)
		if err != nil {
			continue
		}
		for off := 0; off+24 <= len(data); off += 24 {
			info := binary.LittleEndian.Uint64(data[off+8:])
			typ, sym := uint32(info), uint32(info>>32)
			if typ != rX86_64JumpSlot && typ != rX86_64GlobDat && typ != rX86_64Irelative {
				continue
			}
			if typ != rX86_64Irelative {
				if sym == 0 {
					continue
				}
				want[sym] = ""
			} else {
				sym = 0
			}
			relocs = append(relocs, reloc{slot: binary.LittleEndian.Uint64(data[off:]), addend: binary.LittleEndian.Uint64(data[off+16:]), sym: sym})
		}
	}
	if len(want) > 0 {
		f.dynNames(want)
	}
	var ifuncs map[uint64]entry
	slots := make(map[uint64]string, len(relocs))
	for _, r := range relocs {
		if r.sym != 0 {
			if n := want[r.sym]; n != "" {
				slots[r.slot] = n
			}
			continue
		}
		if ifuncs == nil {
			ifuncs = ifuncResolvers(named)
		}
		if e, ok := ifuncs[r.addend]; ok {
			slots[r.slot] = e.Name
		}
	}
	return slots
}

// dynNames fills in the names of the .dynsym symbols whose indexes are the
// keys of want, reading only those entries of the table (debug/elf would
// decode all of them, and a large C++ library has tens of thousands).
// Entries it cannot read stay "".
func (f *File) dynNames(want map[uint32]string) {
	var dynsym *elf.Section
	for _, s := range f.elf.Sections {
		if s.Type == elf.SHT_DYNSYM {
			dynsym = s
			break
		}
	}
	if dynsym == nil || int(dynsym.Link) >= len(f.elf.Sections) {
		return
	}
	syms, err := f.sectionData(dynsym, maxDynamicSize)
	if err != nil {
		return
	}
	strs, err := f.sectionData(f.elf.Sections[dynsym.Link], maxDynamicSize)
	if err != nil {
		return
	}
	const symSize = 24 // Elf64_Sym; st_name is its first word
	for i := range want {
		off := uint64(i) * symSize
		if off+symSize > uint64(len(syms)) {
			continue
		}
		name := uint64(binary.LittleEndian.Uint32(syms[off:]))
		if name >= uint64(len(strs)) {
			continue
		}
		n, _, _ := bytes.Cut(strs[name:], []byte{0})
		want[i] = string(n)
	}
}

// ifuncResolvers maps the address of each IFUNC symbol of es (its
// resolver) to the symbol. Where aliases share it, the name callers use
// wins: the one with fewest leading underscores (memcpy over the global
// __new_memcpy), then as in a [Table].
func ifuncResolvers(es []entry) map[uint64]entry {
	m := make(map[uint64]entry)
	for _, e := range es {
		if !e.ifunc {
			continue
		}
		old, ok := m[e.Addr]
		if !ok {
			m[e.Addr] = e
			continue
		}
		if u, v := leadingUnderscores(e.Name), leadingUnderscores(old.Name); u < v || u == v && better(e, old) > 0 {
			m[e.Addr] = e
		}
	}
	return m
}

// pltRanges returns the address ranges of f's PLT sections (.plt,
// .plt.sec, .plt.got): stubs the linker writes, which no compilation
// unit's DWARF describes.
func (f *File) pltRanges() []addrRange {
	var rs []addrRange
	for _, s := range f.elf.Sections {
		if s.Flags&elf.SHF_EXECINSTR == 0 || s.Size == 0 || s.Addr+s.Size < s.Addr {
			continue
		}
		if s.Name == ".plt" || s.Name == ".plt.sec" || s.Name == ".plt.got" {
			rs = append(rs, addrRange{s.Addr, s.Addr + s.Size})
		}
	}
	return rs
}

// inPLT says whether vaddr is in one of rs.
func inPLT(rs []addrRange, vaddr uint64) bool {
	for _, r := range rs {
		if vaddr >= r.start && vaddr < r.end {
			return true
		}
	}
	return false
}
