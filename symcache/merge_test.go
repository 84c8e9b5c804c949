package symcache

import (
	"bytes"
	"runtime"
	"testing"

	"nsprof/symbol"
)

// decodedEncode is encode as it was before appendEntryAddrs: every
// address's frames decoded, then encoded.
func decodedEncode(key string, e *Entry) []byte {
	return encodeAs(key, e, version, sortedAddrs((*stringTable).appendIndexedAddrFrames), appendIndexed)
}

// TestEncodeMergedAsDecoded checks that an entry read with deltas, with
// frames added since, is written byte for byte as when every address's
// frames were decoded first: the same addresses, each with the frames of
// the first source holding it, the same strings in the same order.
func TestEncodeMergedAsDecoded(t *testing.T) {
	const a, b, c = 0x900000, 0x900010, 0x900020
	payload := manyAddrs(3000)
	file := withDeltas(encode(testKey, payload),
		map[uint64][]symbol.Frame{a: frame("a1"), 0x400000 + 4*7: frame("over the payload"), 0x400000 + 4*8: {}},
		map[uint64][]symbol.Frame{a: frame("a2"), b: frame("b2"), 0x400000 + 4*7: frame("under the first delta")},
		map[uint64][]symbol.Frame{b: frame("b3"), c: frame("c3"), 0x3fff00: frame("below all")},
	)
	read := func() *Entry {
		e, err := decode(testKey, file)
		if err != nil {
			t.Fatal(err)
		}
		e.Frames[c] = frame("c added")
		e.Frames[0x400000+4*9] = frame("added over the payload")
		e.Frames[0x1000] = frame("added below all")
		return e
	}
	for name, e := range map[string]*Entry{"read with deltas": read(), "not read": manyAddrs(500), "empty": {Source: "symtab"}} {
		got, want := encode(testKey, e), decodedEncode(testKey, e)
		if !bytes.Equal(got, want) {
			t.Errorf("%s: written in %d bytes, %d decoded first (the first difference at byte %d)", name, len(got), len(want), firstDiff(got, want))
		}
	}
	// The bytes compared are those of an entry that reads back as the
	// one written.
	e, err := decode(testKey, encode(testKey, read()))
	if err != nil {
		t.Fatal(err)
	}
	for va, name := range map[uint64]string{a: "a1", b: "b2", c: "c added", 0x400000 + 4*7: "over the payload", 0x400000 + 4*9: "added over the payload", 0x3fff00: "below all", 0x1000: "added below all"} {
		if fr, ok := e.FramesAt(va); !ok || len(fr) != 1 || fr[0].Function != name {
			t.Errorf("%#x: %v, %v; want %s's", va, fr, ok, name)
		}
	}
	if fr, ok := e.FramesAt(0x400000 + 4*8); !ok || len(fr) != 0 {
		t.Errorf("%#x: %v, %v; want none, known", 0x400000+4*8, fr, ok)
	}
}

// firstDiff returns the index of the first byte where a and b differ.
func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// TestPutReadEntryAllocates checks that writing whole again a large entry
// read with a delta allocates a few times its size, not the frames of all
// its addresses (decoded, those of putLargeEntry's took 12 times).
func TestPutReadEntryAllocates(t *testing.T) {
	c, _, addrs, size := putLargeEntry(t)
	e := getOK(t, c, testKey)
	if err := c.AddFrames(testKey, e, map[uint64][]symbol.Frame{addrs[len(addrs)-1] + 1: frame("late")}); err != nil {
		t.Fatal(err)
	}
	e.Close()
	e = getOK(t, c, testKey)
	defer e.Close()
	if e.file.deltas != 1 {
		t.Fatalf("%d deltas read, want 1", e.file.deltas)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	if err := c.Put(testKey, e); err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	if n := after.TotalAlloc - before.TotalAlloc; n > uint64(5*size) {
		t.Errorf("Put of a %d-byte entry read allocated %d bytes", size, n)
	}
	back := getOK(t, c, testKey)
	defer back.Close()
	if back.NumAddrs() != len(addrs)+1 || back.file.deltas != 0 {
		t.Errorf("written back: %d addresses and %d deltas, want %d and 0", back.NumAddrs(), back.file.deltas, len(addrs)+1)
	}
}
