package unwind

import (
	"encoding/binary"
	"encoding/hex"
	"slices"
	"testing"
)

// pythonTrampolineEHFrame is the .eh_frame Python 3.13's -X perf_jit
// wrote in its jitdump for each of its trampolines (sub $8,%rsp; call
// *%rcx; add $8,%rsp; ret: 11 bytes, no frame pointer): a CIE (zR,
// pc-relative sdata4, CFA rsp+8, return address at CFA-8) and an FDE
// whose pc_begin, -48, puts the code 16 bytes before the bytes; then CFA
// rsp+16 from offset 4, rsp+8 from offset 10.
var pythonTrampolineEHFrame, _ = hex.DecodeString(
	"1400000000000000017a5200017810011b0c070890010000" +
		"140000001c000000d0ffffff0b00000000440e10460e0800")

// withFDE returns a copy of the trampoline's .eh_frame with its FDE's
// pc_begin and its first CFA offset changed.
func withFDE(pcBegin int32, cfaOff byte) []byte {
	b := slices.Clone(pythonTrampolineEHFrame)
	binary.LittleEndian.PutUint32(b[32:], uint32(pcBegin))
	b[43] = cfaOff
	return b
}

// A JIT's code without frame pointers is unwound through from the call
// frame information its jitdump gave, wherever the JIT meant the bytes
// to be placed, the later code winning where two overlap; without it the
// frame-pointer walk stops there.
func TestJITTable(t *testing.T) {
	const a, b = 0x7f0000001000, 0x7f0000001110 // two trampolines
	const caller = 0x401234
	jt, err := JITTable([]JITCode{
		{Start: a, End: a + 11, EHFrame: pythonTrampolineEHFrame},
		// Placed by a JIT that puts its bytes 32 bytes after the code,
		// over a code first described wrongly (CFA rsp+32): it wins.
		{Start: b, End: b + 11, EHFrame: withFDE(-32, 32)},
		{Start: b, End: b + 11, EHFrame: withFDE(-64, 16)},
	})
	if err != nil || jt == nil {
		t.Fatalf("JITTable: %v, %v", jt, err)
	}
	in := func(pc uint64) bool { return pc >= a && pc < a+11 || pc >= b && pc < b+11 }
	jit := mapFunc(func(pc uint64) (Module, bool) {
		if in(pc) {
			return Module{Table: jt}, true
		}
		return Module{}, false
	})
	none := mapFunc(func(uint64) (Module, bool) { return Module{}, false })
	const sp = 0x8000
	for _, c := range []struct {
		ip    uint64
		stack []byte
	}{
		{a + 6, words(0x5555, caller, 0)}, // after the call: CFA rsp+16
		{b + 6, words(0x5555, caller, 0)},
		{a, words(caller, 0)},      // at entry: CFA rsp+8
		{b + 10, words(caller, 0)}, // at ret
	} {
		// rbp holds what the interpreter left in it, no frame.
		regs := Regs{IP: c.ip, SP: sp, BP: 0x1235}
		chain, _ := Unwind(nil, regs, c.stack, jit, 8)
		if len(chain) < 2 || chain[0] != c.ip || chain[1] != caller {
			t.Errorf("from %#x: chain %x, want %#x then %#x", c.ip, chain, c.ip, caller)
		}
		if chain, _ := Unwind(nil, regs, c.stack, none, 8); len(chain) != 1 {
			t.Errorf("from %#x without the JIT's CFI: chain %x, want the IP alone", c.ip, chain)
		}
	}
	if _, ok := jt.lookup(a + 11); ok {
		t.Error("a row past the code's end")
	}
}

// Bytes that are not call frame information give no table and an error;
// an empty or reversed range is left out.
func TestJITTableBad(t *testing.T) {
	for _, codes := range [][]JITCode{
		{{Start: 0x1000, End: 0x100b, EHFrame: []byte{0xff, 0xff, 0xff, 0x0f, 1, 2}}},
		{{Start: 0x1000, End: 0x1000, EHFrame: pythonTrampolineEHFrame}},
		{{Start: 0x1000, End: 0x0fff, EHFrame: pythonTrampolineEHFrame}},
		nil,
	} {
		if jt, err := JITTable(codes); jt != nil {
			t.Errorf("JITTable(%v) = a table of %d rows, %v", codes, jt.Len(), err)
		}
	}
	if _, err := JITTable([]JITCode{{Start: 0x1000, End: 0x100b, EHFrame: []byte{0xff, 0xff, 0xff, 0x0f, 1, 2}}}); err == nil {
		t.Error("bad bytes: no error")
	}
}

func FuzzJITTable(f *testing.F) {
	f.Add(pythonTrampolineEHFrame, uint64(0x7f0000001000), uint16(11))
	f.Add(withFDE(-4096, 200), uint64(1<<63), uint16(4096))
	f.Fuzz(func(t *testing.T, eh []byte, start uint64, size uint16) {
		end := start + uint64(size)
		jt, _ := JITTable([]JITCode{{Start: start, End: end, EHFrame: eh}})
		if jt == nil {
			return
		}
		if end < start {
			t.Fatalf("a table for the wrapping range %#x-%#x", start, end)
		}
		for _, r := range jt.rows {
			if r.addr < start || r.addr > end {
				t.Fatalf("row at %#x outside the code at %#x-%#x", r.addr, start, end)
			}
		}
	})
}
