package perf

import (
	"math/bits"
	"runtime"
)

// Register numbers of x86-64 in a sample's user registers
// (PERF_REG_X86_*). They are bit positions in the sample_regs_user mask,
// not DWARF register numbers.
const (
	RegX86AX    = 0
	RegX86BX    = 1
	RegX86CX    = 2
	RegX86DX    = 3
	RegX86SI    = 4
	RegX86DI    = 5
	RegX86BP    = 6
	RegX86SP    = 7
	RegX86IP    = 8
	RegX86Flags = 9
	RegX86R8    = 16
	RegX86R15   = 23
)

// Register numbers of arm64 (PERF_REG_ARM64_*): X0..X30 are 0..30.
const (
	RegARM64LR = 30
	RegARM64SP = 31
	RegARM64PC = 32
)

// Register ABIs of a sample's user registers (PERF_SAMPLE_REGS_ABI_*).
const (
	RegsABINone = 0 // no user registers: a kernel thread was sampled
	RegsABI32   = 1
	RegsABI64   = 2
)

// userRegsMask returns the sample_regs_user mask that a DWARF unwinder
// needs on goarch: the general-purpose registers, stack pointer and
// instruction pointer; with frame on amd64, the instruction, stack and
// frame pointers only ([Options.FrameRegs]). It is zero where nsprof does
// not know the layout.
func userRegsMask(goarch string, frame bool) uint64 {
	switch {
	case goarch == "amd64" && frame:
		return 1<<RegX86IP | 1<<RegX86SP | 1<<RegX86BP
	case goarch == "amd64":
		// AX..SP, IP, R8..R15. FLAGS, CS and SS are useless for unwinding
		// and DS..GS are rejected on x86-64.
		return 1<<(RegX86IP+1) - 1 | (1<<(RegX86R15+1)-1)&^(1<<RegX86R8-1)
	case goarch == "arm64":
		return 1<<(RegARM64PC+1) - 1
	}
	return 0
}

// hostRegsMask is the mask used for the running architecture.
var hostRegsMask = userRegsMask(runtime.GOARCH, false)

// UserReg returns register reg (a RegX86* or RegARM64* number) of sample s,
// whose registers were recorded with the mask f.RegsUser. It reports false
// when the register was not recorded.
func (f Format) UserReg(s *Sample, reg uint) (uint64, bool) {
	if reg >= 64 || f.RegsUser&(1<<reg) == 0 || s.RegsABI == RegsABINone {
		return 0, false
	}
	i := bits.OnesCount64(f.RegsUser & (1<<reg - 1))
	if i >= len(s.Regs) {
		return 0, false
	}
	return s.Regs[i], true
}
