package record

import (
	"encoding/hex"
	"math/bits"
	"testing"

	"nsprof/unwind"
)

// trampolineEHFrame is the .eh_frame Python 3.13 wrote for each of its
// 11-byte trampolines (see unwind's TestJITTable).
var trampolineEHFrame, _ = hex.DecodeString(
	"1400000000000000017a5200017810011b0c070890010000" +
		"140000001c000000d0ffffff0b00000000440e10460e0800")

// Codes read in batches are each found, in a number of levels that grows
// as the logarithm of the codes', and a later code over an earlier one's
// memory wins.
func TestJITUnwindLevels(t *testing.T) {
	var j jitUnwind
	const base = 0x7f0000000000
	code := func(i int) unwind.JITCode {
		return unwind.JITCode{Start: base + uint64(i)*16, End: base + uint64(i)*16 + 11, EHFrame: trampolineEHFrame}
	}
	n := 0
	for batch := range 40 {
		var codes []unwind.JITCode
		for range batch%5 + 1 {
			codes = append(codes, code(n))
			n++
		}
		j.add(codes)
		if most := bits.Len(uint(n)) + 1; len(j.levels) > most {
			t.Fatalf("%d codes in %d levels, want at most %d", n, len(j.levels), most)
		}
	}
	for i := range n {
		if j.find(base+uint64(i)*16+5) == nil {
			t.Fatalf("code %d of %d not found", i, n)
		}
	}
	if j.find(base+uint64(n)*16+5) != nil {
		t.Error("an address past the codes found")
	}
	// Code 0's memory reused by a later code: the latest level, which
	// holds it, answers for it (unwind.JITTable has the later win within
	// a level).
	j.add([]unwind.JITCode{code(0)})
	if last := j.levels[len(j.levels)-1].table; j.find(base+5) != last {
		t.Error("an earlier level answers for a later code's memory")
	}
}
