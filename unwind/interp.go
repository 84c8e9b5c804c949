package unwind

import (
	"fmt"
	"math"
)

// x86-64 DWARF register numbers.
const (
	dwarfRBP = 6
	dwarfRSP = 7
	dwarfRA  = 16 // the return address column, rip
)

// cfaKind says how a row finds the canonical frame address.
type cfaKind uint8

const (
	cfaNone    cfaKind = iota // no CFI covers the address
	cfaSP                     // rsp + off
	cfaBP                     // rbp + off
	cfaReg                    // another register (row.arg) + off: not followed
	cfaDerefSP                // *(rsp + off): a signal frame's saved rsp
	cfaPLT                    // rsp + off, +8 when (rip&15) >= row.arg: a PLT entry
	cfaExpr                   // another expression: not followed
)

// ruleKind says where a register of the caller is.
type ruleKind uint8

const (
	ruleSame   ruleKind = iota // unchanged (same value, or unspecified)
	ruleUndef                  // undefined: for the return address, the outermost frame
	ruleCFA                    // saved at CFA + off
	ruleSP                     // saved at rsp + off (DW_OP_breg7 expressions of signal frames)
	ruleValCFA                 // the value is CFA + off
	ruleReg                    // in another register: not followed
	ruleExpr                   // another expression: not followed
)

// rule is one register's rule while interpreting.
type rule struct {
	kind ruleKind
	off  int64
}

// state is the row being built by the interpreter.
type state struct {
	cfa    cfaKind
	cfaReg uint64
	cfaOff int64
	pltK   uint8
	bp, ra rule
}

// maxStateStack bounds DW_CFA_remember_state nesting.
const maxStateStack = 64

// DW_CFA opcodes.
const (
	cfaAdvanceLoc        = 0x40
	cfaOffset            = 0x80
	cfaRestore           = 0xc0
	cfaNop               = 0x00
	cfaSetLoc            = 0x01
	cfaAdvanceLoc1       = 0x02
	cfaAdvanceLoc2       = 0x03
	cfaAdvanceLoc4       = 0x04
	cfaOffsetExtended    = 0x05
	cfaRestoreExtended   = 0x06
	cfaUndefined         = 0x07
	cfaSameValue         = 0x08
	cfaRegister          = 0x09
	cfaRememberState     = 0x0a
	cfaRestoreState      = 0x0b
	cfaDefCFA            = 0x0c
	cfaDefCFARegister    = 0x0d
	cfaDefCFAOffset      = 0x0e
	cfaDefCFAExpression  = 0x0f
	cfaExpressionOp      = 0x10
	cfaOffsetExtendedSF  = 0x11
	cfaDefCFASF          = 0x12
	cfaDefCFAOffsetSF    = 0x13
	cfaValOffset         = 0x14
	cfaValOffsetSF       = 0x15
	cfaValExpression     = 0x16
	cfaGNUArgsSize       = 0x2e
	cfaGNUNegOffsetExtnd = 0x2f
)

// interp runs CFA instructions. For a CIE's initial instructions emit is
// nil and init is nil; for an FDE, init is the CIE's state (the target of
// DW_CFA_restore) and emit receives each row: the state that holds from
// addr until the next row.
type interp struct {
	c     *cie
	init  *state
	stack []state
}

func (in *interp) setReg(st *state, reg uint64, r rule) {
	switch reg {
	case dwarfRBP:
		st.bp = r
	case in.c.raReg:
		st.ra = r
	}
}

func (in *interp) restore(st *state, reg uint64) {
	r := rule{}
	if in.init != nil {
		switch reg {
		case dwarfRBP:
			r = in.init.bp
		case in.c.raReg:
			r = in.init.ra
		}
	}
	in.setReg(st, reg, r)
}

// run interprets insns from loc, stopping at end, calling emit before
// each advance and once at the end.
func (in *interp) run(r *buf, st *state, loc, end uint64, emit func(uint64, *state)) error {
	c := in.c
	// backward is set by a location before the current one (a DW_CFA_set_loc
	// going back, or an advance that wraps): rows would come out of order.
	backward := false
	advance := func(to uint64) bool {
		if to == loc {
			return true
		}
		if to < loc {
			backward = true
			return false
		}
		if emit != nil {
			emit(loc, st)
		}
		loc = to
		return loc < end
	}
	for r.left() > 0 {
		at := r.off
		op := r.u8()
		var ok = true
		switch op & 0xc0 {
		case cfaAdvanceLoc:
			if !advance(loc + uint64(op&0x3f)*c.codeAlign) {
				if backward {
					return fmt.Errorf("offset %#x: DW_CFA_advance_loc wraps the location", at)
				}
				return nil
			}
			continue
		case cfaOffset:
			in.setReg(st, uint64(op&0x3f), rule{ruleCFA, int64(r.uleb()) * c.dataAlign})
			continue
		case cfaRestore:
			in.restore(st, uint64(op&0x3f))
			continue
		}
		switch op {
		case cfaNop:
		case cfaSetLoc:
			to, good := r.ptr(c.fdeEnc)
			if !good {
				return fmt.Errorf("offset %#x: DW_CFA_set_loc encoding %#x", at, c.fdeEnc)
			}
			ok = advance(to)
		case cfaAdvanceLoc1:
			ok = advance(loc + uint64(r.u8())*c.codeAlign)
		case cfaAdvanceLoc2:
			ok = advance(loc + uint64(r.u16())*c.codeAlign)
		case cfaAdvanceLoc4:
			ok = advance(loc + uint64(r.u32())*c.codeAlign)
		case cfaOffsetExtended:
			reg := r.uleb()
			in.setReg(st, reg, rule{ruleCFA, int64(r.uleb()) * c.dataAlign})
		case cfaRestoreExtended:
			in.restore(st, r.uleb())
		case cfaUndefined:
			in.setReg(st, r.uleb(), rule{kind: ruleUndef})
		case cfaSameValue:
			in.setReg(st, r.uleb(), rule{kind: ruleSame})
		case cfaRegister:
			reg := r.uleb()
			r.uleb()
			in.setReg(st, reg, rule{kind: ruleReg})
		case cfaRememberState:
			if len(in.stack) >= maxStateStack {
				return fmt.Errorf("offset %#x: DW_CFA_remember_state nested deeper than %d", at, maxStateStack)
			}
			in.stack = append(in.stack, *st)
		case cfaRestoreState:
			if len(in.stack) == 0 {
				return fmt.Errorf("offset %#x: DW_CFA_restore_state without remember_state", at)
			}
			*st = in.stack[len(in.stack)-1]
			in.stack = in.stack[:len(in.stack)-1]
		case cfaDefCFA:
			st.cfaReg = r.uleb()
			st.cfaOff = int64(r.uleb())
			st.cfa = regCFA(st.cfaReg)
		case cfaDefCFASF:
			st.cfaReg = r.uleb()
			st.cfaOff = r.sleb() * c.dataAlign
			st.cfa = regCFA(st.cfaReg)
		case cfaDefCFARegister:
			st.cfaReg = r.uleb()
			st.cfa = regCFA(st.cfaReg)
		case cfaDefCFAOffset:
			st.cfaOff = int64(r.uleb())
		case cfaDefCFAOffsetSF:
			st.cfaOff = r.sleb() * c.dataAlign
		case cfaDefCFAExpression:
			expr := r.bytes(r.uleb())
			st.cfa, st.cfaOff, st.pltK = cfaExpression(expr)
		case cfaExpressionOp:
			reg := r.uleb()
			expr := r.bytes(r.uleb())
			in.setReg(st, reg, regExpression(expr))
		case cfaOffsetExtendedSF:
			reg := r.uleb()
			in.setReg(st, reg, rule{ruleCFA, r.sleb() * c.dataAlign})
		case cfaValOffset:
			reg := r.uleb()
			in.setReg(st, reg, rule{ruleValCFA, int64(r.uleb()) * c.dataAlign})
		case cfaValOffsetSF:
			reg := r.uleb()
			in.setReg(st, reg, rule{ruleValCFA, r.sleb() * c.dataAlign})
		case cfaValExpression:
			reg := r.uleb()
			r.bytes(r.uleb())
			in.setReg(st, reg, rule{kind: ruleExpr})
		case cfaGNUArgsSize:
			r.uleb()
		case cfaGNUNegOffsetExtnd:
			reg := r.uleb()
			in.setReg(st, reg, rule{ruleCFA, -int64(r.uleb()) * c.dataAlign})
		default:
			return fmt.Errorf("offset %#x: unknown DW_CFA opcode %#x", at, op)
		}
		if r.bad {
			return fmt.Errorf("offset %#x: truncated DW_CFA opcode %#x", at, op)
		}
		if backward {
			return fmt.Errorf("offset %#x: DW_CFA opcode %#x moves the location back from %#x", at, op, loc)
		}
		if !ok {
			return nil
		}
	}
	if emit != nil && loc < end {
		emit(loc, st)
	}
	return nil
}

func regCFA(reg uint64) cfaKind {
	switch reg {
	case dwarfRSP:
		return cfaSP
	case dwarfRBP:
		return cfaBP
	}
	return cfaReg
}

// DWARF expression opcodes the recognized patterns use.
const (
	opDeref = 0x06
	opAnd   = 0x1a
	opPlus  = 0x22
	opShl   = 0x24
	opGe    = 0x2a
	opLit0  = 0x30
	opBreg0 = 0x70
)

// cfaExpression recognizes the two CFA expressions x86-64 code uses:
// a signal frame's "rsp+N, deref" (glibc's __restore_rt) and the PLT's
// "rsp+N + ((rip&15) >= K) << 3". Others are cfaExpr.
func cfaExpression(e []byte) (cfaKind, int64, uint8) {
	r := buf{b: e}
	if r.u8() != opBreg0+dwarfRSP {
		return cfaExpr, 0, 0
	}
	off := r.sleb()
	rest := r.b[r.off:]
	if len(rest) == 1 && rest[0] == opDeref && !r.bad {
		return cfaDerefSP, off, 0
	}
	// breg16 0; lit15; and; litK; ge; lit3; shl; plus
	if len(rest) == 9 && rest[0] == opBreg0+dwarfRA && rest[1] == 0 && rest[2] == opLit0+15 &&
		rest[3] == opAnd && rest[4] >= opLit0 && rest[4] < opLit0+16 && rest[5] == opGe &&
		rest[6] == opLit0+3 && rest[7] == opShl && rest[8] == opPlus {
		return cfaPLT, off, rest[4] - opLit0
	}
	return cfaExpr, 0, 0
}

// regExpression recognizes "rsp+N" as a register's address, which signal
// frames use for every register saved in the ucontext.
func regExpression(e []byte) rule {
	r := buf{b: e}
	if r.u8() == opBreg0+dwarfRSP {
		off := r.sleb()
		if !r.bad && r.left() == 0 {
			return rule{ruleSP, off}
		}
	}
	return rule{kind: ruleExpr}
}

// fits reports whether v fits a row's 16-bit register offset.
func fits16(v int64) bool { return v >= math.MinInt16 && v <= math.MaxInt16 }
