package record

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// appendJITLoad appends to a jitdump the load of an 11-byte code at addr
// with no unwinding record before it (V8's, walked by frame pointers).
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
	b = append(b, 'g', 0)
	return append(b, make([]byte, 11)...)
}

// An address of the process's anonymous executable memory that its dump
// does not describe is JIT code not described yet (jitMissed), until the
// dump describes it, with call frame information or without; an address
// of no such memory is not.
func TestJITMissed(t *testing.T) {
	le := binary.LittleEndian
	var b []byte
	for _, v := range []uint32{0x4A695444, 1, 40, 62, 0, 1} {
		b = le.AppendUint32(b, v)
	}
	b = le.AppendUint64(b, 0)
	b = le.AppendUint64(b, 0)
	const a, c, v8 = 0x7f0000001000, 0x7f0000001110, 0x7f0000001220
	b = appendJITCode(b, a)
	path := filepath.Join(t.TempDir(), "jit-1.dump")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	u := &dwarfUnwinder{}
	p := &symProc{jit: []jitDump{{f: f}}, other: []span{{0x7f0000000000, 0x7f0000010000}}}
	at := int64(5e9)
	missed := func(pc uint64) bool {
		u.jitMissed = 0
		u.jitModule(p, pc, at)
		return u.jitMissed != 0
	}
	if missed(a + 5) {
		t.Error("described code missed")
	}
	if !missed(c + 5) {
		t.Error("code the dump does not describe yet not missed")
	}
	u.jitModule(p, c+7, at) // further on the same stack
	if u.jitMissed != c+5 {
		t.Errorf("missed at %#x, want the first address, %#x", u.jitMissed, c+5)
	}
	if missed(0x7e0000000000) {
		t.Error("an address of no anonymous executable memory missed")
	}
	b = appendJITCode(b, c)
	b = appendJITLoad(b, v8)
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	at += int64(jitUnwindRecheck)
	if missed(c+5) || missed(v8+5) {
		t.Error("code described since still missed")
	}
	if !missed(v8 + 11) {
		t.Error("the address past the last code not missed")
	}
	if p.jitUnwind.reads != 2 {
		t.Errorf("%d reads found codes, want 2", p.jitUnwind.reads)
	}
}

// Spans merge into sorted, disjoint ones: overlapping and touching ones
// join.
func TestMergeSpans(t *testing.T) {
	for _, c := range []struct {
		a, b, want []span
	}{
		{nil, nil, []span{}},
		{[]span{{1, 3}}, nil, []span{{1, 3}}},
		{[]span{{1, 3}, {10, 12}}, []span{{2, 5}, {5, 6}, {20, 21}}, []span{{1, 6}, {10, 12}, {20, 21}}},
		{[]span{{10, 12}}, []span{{1, 2}, {3, 4}, {11, 30}}, []span{{1, 2}, {3, 4}, {10, 30}}},
		{[]span{{1, 100}}, []span{{2, 3}, {50, 60}}, []span{{1, 100}}},
	} {
		if got := mergeSpans(c.a, c.b); !slices.Equal(got, c.want) {
			t.Errorf("mergeSpans(%v, %v) = %v, want %v", c.a, c.b, got, c.want)
		}
	}
	var j jitUnwind
	j.known = []span{{0x1000, 0x1010}, {0x2000, 0x2010}}
	for pc, want := range map[uint64]bool{0xfff: false, 0x1000: true, 0x100f: true, 0x1010: false, 0x1500: false, 0x2005: true, 0x3000: false} {
		if got := j.knows(pc); got != want {
			t.Errorf("knows(%#x) = %v, want %v", pc, got, want)
		}
	}
}

// Stack copies put in the spill file are read back as they were, also
// after the file was emptied and filled again.
func TestStackSpill(t *testing.T) {
	var sp stackSpill
	defer sp.close()
	for round := range 2 {
		var offs []int64
		var want [][]byte
		for i := range 40 {
			b := bytes.Repeat([]byte(fmt.Sprintf("%d.%d;", round, i)), 300+i*50)
			off, ok := sp.put(b)
			if !ok {
				t.Fatalf("round %d: copy %d not put", round, i)
			}
			offs, want = append(offs, off), append(want, b)
		}
		for i := len(want) - 1; i >= 0; i-- {
			got, err := sp.get(offs[i], len(want[i]))
			if err != nil || !bytes.Equal(got, want[i]) {
				t.Fatalf("round %d: copy %d read back as %d bytes (%v), want %d bytes %q...", round, i, len(got), err, len(want[i]), want[i][:8])
			}
		}
		sp.reset()
		if st, err := sp.f.Stat(); err != nil || st.Size() != 0 {
			t.Fatalf("round %d: the file has %d bytes after reset (%v)", round, st.Size(), err)
		}
	}
	if _, ok := sp.put(make([]byte, maxJITDeferredBytes+1)); ok {
		t.Error("a copy past the bound put")
	}
}
