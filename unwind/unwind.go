package unwind

import (
	"encoding/binary"
	"fmt"
)

// Regs are the user registers an unwind starts from: those of the sample.
type Regs struct {
	IP, SP, BP uint64
}

// Module is the object code mapped at an address.
type Module struct {
	// Table is the object's call frame information, or nil when it has
	// none: frame pointers are then followed.
	Table *Table
	// Bias is subtracted from an address to get the link-time address
	// Table uses (see [Table.Bias]).
	Bias uint64
}

// Mapper finds the module mapped at an address of the unwound process.
type Mapper interface {
	// Find returns the module mapped at pc. ok is false when no file maps
	// pc (anonymous memory, such as JIT code): frame pointers are then
	// followed.
	Find(pc uint64) (m Module, ok bool)
}

// Stop says why an unwind ended.
type Stop uint8

const (
	// StopEnd: the outermost frame was reached (its return address is
	// undefined in the CFI, as in _start and clone, or zero).
	StopEnd Stop = iota
	// StopTruncated: the next frame lies beyond the copied stack bytes.
	// The frames found so far are right; the callers are missing.
	StopTruncated
	// StopBadFrame: a frame did not lie above the previous one, or frame
	// pointers led below the stack: what follows would be invented.
	StopBadFrame
	// StopUnsupported: a CFA or register rule this package does not
	// follow (such as a CFA in a register other than rsp or rbp).
	StopUnsupported
	// StopDepth: the most frames asked for were found, or (UnwindTo)
	// the return address asked for.
	StopDepth
)

var stopNames = [...]string{"end", "truncated", "bad frame", "unsupported rule", "depth"}

// String names the reason.
func (s Stop) String() string {
	if int(s) < len(stopNames) {
		return stopNames[s]
	}
	return fmt.Sprintf("Stop(%d)", int(s))
}

// stackReader reads 8-byte words of the copied stack, which starts at sp.
type stackReader struct {
	b  []byte
	sp uint64
}

// read returns the word at addr. stop is StopTruncated past the copy's
// end and StopBadFrame below its start.
func (s *stackReader) read(addr uint64) (uint64, Stop, bool) {
	if addr < s.sp {
		return 0, StopBadFrame, false
	}
	off := addr - s.sp
	if off > uint64(len(s.b)) || uint64(len(s.b))-off < 8 {
		return 0, StopTruncated, false
	}
	return binary.LittleEndian.Uint64(s.b[off:]), 0, true
}

// Unwind appends the user callchain to dst: regs.IP, then the return
// address of each caller, outermost last, at most max addresses in all.
// stack holds the bytes copied from regs.SP upwards. It returns the
// chain and why it ended; it never guesses past a frame it cannot read.
func Unwind(dst []uint64, regs Regs, stack []byte, m Mapper, max int) ([]uint64, Stop) {
	return UnwindTo(dst, regs, stack, m, max, 0)
}

// UnwindTo is Unwind that also ends, with StopDepth, once it has appended
// the return address to (0: never): a caller that needs the frames up to
// one it already knows of takes no more steps, each a table lookup.
func UnwindTo(dst []uint64, regs Regs, stack []byte, m Mapper, max int, to uint64) ([]uint64, Stop) {
	st := stackReader{b: stack, sp: regs.SP}
	pc, sp, bp := regs.IP, regs.SP, regs.BP
	exact := true // pc is the interrupted instruction, not a return address
	for n := 0; ; n++ {
		if n >= max {
			return dst, StopDepth
		}
		dst = append(dst, pc)
		look := pc
		if !exact {
			// A return address may lie past the end of a call to a
			// function that does not return.
			look--
		}
		var r row
		found := false
		if mod, ok := m.Find(look); ok && mod.Table != nil {
			r, found = mod.Table.lookup(look - mod.Bias)
		}
		var cfa, ra, nbp uint64
		var stop Stop
		ok := true
		if !found {
			// Frame pointers: the saved rbp at rbp, the return address
			// above it.
			if bp < sp || bp&7 != 0 {
				return dst, StopBadFrame
			}
			if nbp, stop, ok = st.read(bp); !ok {
				return dst, stop
			}
			if ra, stop, ok = st.read(bp + 8); !ok {
				return dst, stop
			}
			cfa, exact = bp+16, false
		} else {
			switch r.cfa {
			case cfaSP:
				cfa = sp + uint64(int64(r.cfaOff))
			case cfaBP:
				cfa = bp + uint64(int64(r.cfaOff))
			case cfaPLT:
				cfa = sp + uint64(int64(r.cfaOff))
				if pc&15 >= uint64(r.arg) {
					cfa += 8
				}
			case cfaDerefSP:
				if cfa, stop, ok = st.read(sp + uint64(int64(r.cfaOff))); !ok {
					return dst, stop
				}
			default:
				return dst, StopUnsupported
			}
			switch r.ra {
			case ruleCFA:
				ra, stop, ok = st.read(cfa + uint64(int64(r.raOff)))
			case ruleSP:
				ra, stop, ok = st.read(sp + uint64(int64(r.raOff)))
			case ruleUndef:
				return dst, StopEnd
			default:
				return dst, StopUnsupported
			}
			if !ok {
				return dst, stop
			}
			switch r.bp {
			case ruleSame:
				nbp = bp
			case ruleCFA:
				nbp, stop, ok = st.read(cfa + uint64(int64(r.bpOff)))
			case ruleSP:
				nbp, stop, ok = st.read(sp + uint64(int64(r.bpOff)))
			case ruleValCFA:
				nbp = cfa + uint64(int64(r.bpOff))
			default:
				nbp = 0 // unknown: a caller that needs rbp stops there
			}
			if !ok {
				return dst, stop
			}
			if !r.signal && cfa <= sp {
				return dst, StopBadFrame
			}
			exact = r.signal
		}
		if ra == 0 {
			return dst, StopEnd
		}
		if ra == to && n+1 < max {
			return append(dst, ra), StopDepth
		}
		pc, sp, bp = ra, cfa, nbp
	}
}
