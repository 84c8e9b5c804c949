package record

import (
	"encoding/binary"
	"encoding/hex"
	"math/bits"
	"os"
	"path/filepath"
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

// openJITDump writes jitdump b to a new file and opens it (closed when
// the test ends).
func openJITDump(t *testing.T, b []byte) (string, *os.File) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "jit-1.dump")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return path, f
}

// jitDumpHeader returns a little-endian jitdump's header.
func jitDumpHeader() []byte {
	le := binary.LittleEndian
	var b []byte
	for _, v := range []uint32{0x4A695444, 1, 40, 62, 0, 1} {
		b = le.AppendUint32(b, v)
	}
	b = le.AppendUint64(b, 0)
	return le.AppendUint64(b, 0)
}

// appendJITCode appends to a jitdump an unwinding record holding
// trampolineEHFrame, then the load of an 11-byte code at addr.
func appendJITCode(b []byte, addr uint64) []byte {
	le := binary.LittleEndian
	b = le.AppendUint32(b, 4) // unwinding information
	b = le.AppendUint32(b, uint32(40+len(trampolineEHFrame)))
	b = le.AppendUint64(b, 0)
	b = le.AppendUint64(b, uint64(len(trampolineEHFrame))) // unwinding size
	b = le.AppendUint64(b, 0)                              // no .eh_frame_hdr
	b = le.AppendUint64(b, uint64(len(trampolineEHFrame)))
	b = append(b, trampolineEHFrame...)
	return appendJITLoad(b, addr)
}

// appendJITLoad appends to a jitdump the load of an 11-byte code at addr;
// alone, with no unwinding record before it, it is code walked by frame
// pointers (V8's).
func appendJITLoad(b []byte, addr uint64) []byte {
	le := binary.LittleEndian
	b = le.AppendUint32(b, 0) // code load
	b = le.AppendUint32(b, 56+2+11)
	b = le.AppendUint64(b, 0)
	b = le.AppendUint32(b, 1)
	b = le.AppendUint32(b, 1)
	b = le.AppendUint64(b, addr)
	b = le.AppendUint64(b, addr)
	b = le.AppendUint64(b, 11)
	b = le.AppendUint64(b, addr)
	b = append(b, 'f', 0)
	return append(b, make([]byte, 11)...)
}

// A process's jitdump is read again as it grows, when an address it did
// not cover is unwound through, at most every jitUnwindRecheck of the
// samples' time.
func TestJITModuleRereads(t *testing.T) {
	b := jitDumpHeader()
	const a, c = 0x7f0000001000, 0x7f0000001110
	b = appendJITCode(b, a)
	path, f := openJITDump(t, b)
	u := &dwarfUnwinder{}
	p := &symProc{jit: []jitDump{{f: f}}}
	const t0 = int64(5e9)
	if _, ok := u.jitModule(p, a+5, t0); !ok {
		t.Fatal("the code in the dump not found")
	}
	if err := os.WriteFile(path, appendJITCode(b, c), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, ok := u.jitModule(p, c+5, t0+int64(jitUnwindRecheck)/2); ok {
		t.Error("the dump read again within jitUnwindRecheck")
	}
	if _, ok := u.jitModule(p, c+5, t0+int64(jitUnwindRecheck)); !ok {
		t.Error("the code added to the dump not found after jitUnwindRecheck")
	}
	if _, ok := u.jitModule(p, a+5, t0+int64(jitUnwindRecheck)); !ok {
		t.Error("the first code lost")
	}
	if got := len(p.jitUnwind.levels[0].codes); got != 2 || u.jitUnwindReads != 2 {
		t.Errorf("%d codes in a level, %d reads: want 2 and 2 (the first code read once)", got, u.jitUnwindReads)
	}
}
