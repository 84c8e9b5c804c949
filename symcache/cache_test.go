package symcache

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"nsprof/symbol"
)

const testKey = "0123456789abcdef0123456789abcdef01234567"

func testEntry() *Entry {
	return &Entry{
		Source:   "symtab",
		LoadedAt: 1764115200,
		Symbols: []symbol.Symbol{
			{Name: "_start", Addr: 0x1000, Size: 0x20},
			{Name: "main", Addr: 0x1020, Size: 0x100},
			{Name: "_ZN3foo3barEv", Addr: 0x2000, Size: 1},
		},
		Frames: map[uint64][]symbol.Frame{
			0x1030: {{Function: "inlined", File: "/src/a.c", Line: 12}, {Function: "main", File: "/src/a.c", Line: 40}},
			0x1040: {},
			0x2000: {{Function: "", File: "/src/b.cc", Line: 7}},
		},
		Covered: []Span{{0x1000, 0x1020}, {0x1020, 0x1120}},
		runs:    []Run{{0x1000, 0x1008, 0}, {0x1020, 0x1030, 1}, {0x1030, 0x1034, 2}, {0x1040, 0x1044, 1}},
		lists: [][]symbol.Frame{
			{{Function: "_start", File: "/src/s.S", Line: 3}},
			{{Function: "main", File: "/src/a.c", Line: 39}},
			{{Function: "inlined", File: "/src/a.c", Line: 12}, {Function: "main", File: "/src/a.c", Line: 40}},
		},
	}
}

func openTest(t *testing.T, opts Options) *Cache {
	t.Helper()
	c, err := Open(filepath.Join(t.TempDir(), "symbols"), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func TestRoundTrip(t *testing.T) {
	c := openTest(t, Options{})
	if e, err := c.Get(testKey); e != nil || err != nil {
		t.Fatalf("Get of an empty cache = %v, %v", e, err)
	}
	want := testEntry()
	if err := c.Put(testKey, want); err != nil {
		t.Fatal(err)
	}
	got, err := c.Get(testKey)
	if err != nil {
		t.Fatal(err)
	}
	if got.lazy == nil || got.lazyFrames == nil {
		t.Error("Get decoded the runs and frame lists, or the frames of addresses, of the entry")
	}
	if got.materialize(); !reflect.DeepEqual(got, want) {
		t.Fatalf("Get = %+v, want %+v", got, want)
	}
	st, err := os.Stat(c.Dir())
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o700 {
		t.Errorf("cache directory mode %v, want 0700", st.Mode().Perm())
	}
	if s := c.Stats(); s != (Stats{Hits: 1, Misses: 1, Written: 1}) {
		t.Errorf("Stats = %+v", s)
	}
}

func TestKey(t *testing.T) {
	if k := Key(nil, nil); k != "" {
		t.Errorf("Key without build-id = %q, want none", k)
	}
	gnu := []byte{0xde, 0xad, 0xbe, 0xef, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
	if k := Key(gnu, []byte("x")); k != "deadbeef0102030405060708090a0b0c0d0e0f10" {
		t.Errorf("Key(GNU) = %q", k)
	}
	if k := Key(nil, []byte("abc/def")); !validKey(k) {
		t.Errorf("Key(Go) = %q, not a valid name", k)
	}
}

func TestValidKey(t *testing.T) {
	for k, want := range map[string]bool{
		strings.Repeat("a", 15): false, strings.Repeat("0", 16): true,
		strings.Repeat("f", 80): true, strings.Repeat("9", 81): false,
		"0123456789abcdeg": false, "0123456789abcdeF": false, "0123456789abcd/.": false,
		"0123456789abcdef\x00": false,
	} {
		if validKey(k) != want {
			t.Errorf("validKey(%q) = %v, want %v", k, !want, want)
		}
	}
}

func TestInvalidKey(t *testing.T) {
	c := openTest(t, Options{})
	for _, k := range []string{"../../etc/passwd", "ABCDEF0123456789", "0123", ""} {
		if err := c.Put(k, testEntry()); err == nil {
			t.Errorf("Put(%q) succeeded", k)
		}
		if _, err := c.Get(k); err == nil {
			t.Errorf("Get(%q) succeeded", k)
		}
	}
}

func TestRefusesSymlinkDir(t *testing.T) {
	base := t.TempDir()
	real := filepath.Join(base, "elsewhere")
	if err := os.Mkdir(real, 0o700); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(base, "symbols")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	_, err := Open(link, Options{})
	if err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Fatalf("Open of a symbolic link = %v, want refused", err)
	}
}

func TestRefusesWritableDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "symbols")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	_, err := Open(dir, Options{})
	if err == nil || !strings.Contains(err.Error(), "writable by group or others") {
		t.Fatalf("Open of a world-writable directory = %v, want refused", err)
	}
}

func TestRefusesWritableParent(t *testing.T) {
	parent := filepath.Join(t.TempDir(), "p")
	if err := os.Mkdir(parent, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(parent, 0o777); err != nil {
		t.Fatal(err)
	}
	_, err := Open(filepath.Join(parent, "symbols"), Options{})
	if err == nil || !strings.Contains(err.Error(), "parent") {
		t.Fatalf("Open under a world-writable parent = %v, want refused", err)
	}
	// With the sticky bit (as /tmp), others cannot rename the directory.
	if err := os.Chmod(parent, 0o777|os.ModeSticky); err != nil {
		t.Fatal(err)
	}
	c, err := Open(filepath.Join(parent, "symbols"), Options{})
	if err != nil {
		t.Fatalf("Open under a sticky parent: %v", err)
	}
	c.Close()
}

func TestRefusesOtherOwner(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to give a directory away")
	}
	dir := filepath.Join(t.TempDir(), "symbols")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(dir, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	_, err := Open(dir, Options{})
	if err == nil || !strings.Contains(err.Error(), "owned by uid 65534") {
		t.Fatalf("Open of another user's directory = %v, want refused", err)
	}
}

// TestPlantedEntries checks that entries that are not what Put writes are
// ignored and counted: a symbolic link to a valid entry, another user's
// file, a truncated or altered entry, another build-id's entry.
func TestPlantedEntries(t *testing.T) {
	c := openTest(t, Options{})
	other := "fedcba9876543210fedcba9876543210fedcba98"
	if err := c.Put(other, testEntry()); err != nil {
		t.Fatal(err)
	}
	good, err := os.ReadFile(filepath.Join(c.Dir(), other))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(c.Dir(), testKey)
	plant := func(t *testing.T, b []byte) {
		os.Remove(path)
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		name  string
		plant func(t *testing.T)
	}{
		{"symlink", func(t *testing.T) {
			os.Remove(path)
			if err := os.Symlink(other, path); err != nil {
				t.Fatal(err)
			}
		}},
		{"other build-id", func(t *testing.T) { plant(t, good) }},
		{"truncated", func(t *testing.T) { plant(t, good[:len(good)-3]) }},
		{"flipped byte", func(t *testing.T) {
			b := append([]byte(nil), good...)
			b[len(b)-2] ^= 0x40
			plant(t, b)
		}},
		{"empty", func(t *testing.T) { plant(t, nil) }},
		{"directory", func(t *testing.T) {
			os.Remove(path)
			if err := os.Mkdir(path, 0o700); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.Remove(path) })
		}},
	}
	if os.Geteuid() == 0 {
		cases = append(cases, struct {
			name  string
			plant func(t *testing.T)
		}{"other owner", func(t *testing.T) {
			plant(t, encode(testKey, testEntry()))
			if err := os.Chown(path, 65534, 65534); err != nil {
				t.Fatal(err)
			}
		}})
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.plant(t)
			e, err := c.Get(testKey)
			if e != nil || !errors.Is(err, ErrCorrupt) {
				t.Fatalf("Get = %v, %v; want ignored as corrupt", e, err)
			}
			if n := c.Stats().Corrupt; n != i+1 {
				t.Errorf("Stats.Corrupt = %d, want %d", n, i+1)
			}
		})
	}
	// A Put replaces a planted entry rather than writing through it.
	os.Remove(path)
	victim := filepath.Join(t.TempDir(), "victim")
	if err := os.WriteFile(victim, []byte("keep"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(victim, path); err != nil {
		t.Fatal(err)
	}
	if err := c.Put(testKey, testEntry()); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(victim); string(b) != "keep" {
		t.Fatalf("Put wrote through a planted symbolic link: %q", b)
	}
	if e, err := c.Get(testKey); e == nil || err != nil {
		t.Fatalf("Get after Put = %v, %v", e, err)
	}
}

func TestTrimEvictsOldest(t *testing.T) {
	one := int64(len(encode(testKey, testEntry())))
	c := openTest(t, Options{MaxBytes: 2*one + one/2})
	keys := []string{
		"1111111111111111111111111111111111111111",
		"2222222222222222222222222222222222222222",
		"3333333333333333333333333333333333333333",
	}
	now := time.Now()
	for i, k := range keys {
		e := testEntry()
		if err := c.Put(k, e); err != nil {
			t.Fatal(err)
		}
		mt := now.Add(time.Duration(i-10) * time.Minute)
		if err := os.Chtimes(filepath.Join(c.Dir(), k), mt, mt); err != nil {
			t.Fatal(err)
		}
	}
	// Reading the oldest makes it the most recently used.
	if e, _ := c.Get(keys[0]); e == nil {
		t.Fatal("entry missing")
	}
	if err := os.WriteFile(filepath.Join(c.Dir(), "README"), make([]byte, 4*one), 0o600); err != nil {
		t.Fatal(err)
	}
	n, err := c.Trim()
	if err != nil {
		t.Fatal(err)
	}
	if n != 1 {
		t.Errorf("Trim removed %d entries, want 1", n)
	}
	for i, k := range keys {
		_, err := os.Stat(filepath.Join(c.Dir(), k))
		if gone := err != nil; gone != (i == 1) {
			t.Errorf("entry %d: removed = %v", i, gone)
		}
	}
	if _, err := os.Stat(filepath.Join(c.Dir(), "README")); err != nil {
		t.Errorf("Trim removed a file that is no entry: %v", err)
	}
}

// FramesAt answers from Frames, then from the runs, and for an address
// in a covered function outside every run with no frames; elsewhere it
// does not know.
func TestFramesAt(t *testing.T) {
	e := testEntry()
	for _, c := range []struct {
		va     uint64
		frames int
		ok     bool
	}{
		{0x1030, 2, true}, // Frames
		{0x1031, 2, true}, // a run
		{0x1000, 1, true},
		{0x1008, 0, true}, // covered, in no run
		{0x111f, 0, true},
		{0x1120, 0, false},
		{0x0fff, 0, false},
		{0x2001, 0, false},
	} {
		fr, ok := e.FramesAt(c.va)
		if len(fr) != c.frames || ok != c.ok {
			t.Errorf("FramesAt(%#x) = %v, %v; want %d frames, %v", c.va, fr, ok, c.frames, c.ok)
		}
	}
	if !e.IsCovered(0x1020, 0x1120) || e.IsCovered(0x1010, 0x1030) || e.IsCovered(0x1100, 0x1121) {
		t.Error("IsCovered is wrong")
	}
}

// Runs that would answer for addresses the entry does not cover, or
// give no frames, make the entry corrupt: one of version 3 as it is
// read; one of version 4 (whose runs and lists are checked a block at a
// time) as soon as a lookup reaches their block: its runs then answer
// nothing, it counts once as corrupt, and it is decoded whole and
// written back without them. Covered spans are checked as an entry is
// read. An entry of version 1 (no runs) is still read.
func TestDecodeRanges(t *testing.T) {
	for name, c := range map[string]struct {
		mod    func(e *Entry)
		atRead bool // found by decode, in either version
	}{
		"run outside": {func(e *Entry) { e.runs[0].Hi = 0x1021 }, false},
		"run across":  {func(e *Entry) { e.runs[1].Lo = 0x1010 }, false},
		"no list":     {func(e *Entry) { e.runs[2].Frames = 3 }, false},
		"no frames":   {func(e *Entry) { e.lists[2] = nil }, true}, // too few bytes for its lists
		"bad line":    {func(e *Entry) { e.lists[2] = []symbol.Frame{{Function: "f", File: "g", Line: maxLine + 1}} }, false},
		"empty run":   {func(e *Entry) { e.runs[3].Hi = e.runs[3].Lo }, false},
		"overlap":     {func(e *Entry) { e.Covered[1].Lo = 0x1010 }, true},
		"empty":       {func(e *Entry) { e.Covered[0].Hi = e.Covered[0].Lo }, true},
	} {
		e := testEntry()
		c.mod(e)
		if _, err := decode(testKey, encodeV3(testKey, e)); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: version 3: decode error %v, want ErrCorrupt", name, err)
		}
		got, err := decode(testKey, encode(testKey, e))
		if c.atRead {
			if !errors.Is(err, ErrCorrupt) {
				t.Errorf("%s: decode error %v, want ErrCorrupt", name, err)
			}
			continue
		}
		if err != nil || got.lazy == nil {
			t.Errorf("%s: decode = %v; want the entry, its runs checked as they are looked up", name, err)
			continue
		}
		bad := 0
		got.lazy.onBad = func() { bad++ }
		for _, r := range testEntry().runs {
			got.FramesAt(r.Lo)
			got.FramesAt(r.Lo + 1)
		}
		if bad != 1 {
			t.Errorf("%s: the bad block was counted %d times, want once", name, bad)
		}
		for _, va := range []uint64{0x1000, 0x1021, 0x1041, 0x1100} {
			if fr, ok := got.FramesAt(va); ok {
				t.Errorf("%s: FramesAt(%#x) = %v from the runs of a bad entry", name, va, fr)
			}
		}
		again, err := decode(testKey, encode(testKey, got))
		if err != nil || again.NumRuns() != 0 || again.NumFrameLists() != 0 || again.Covered != nil {
			t.Errorf("%s: written back: %v, %d runs, %d lists, covered %v; want none", name, err, again.NumRuns(), again.NumFrameLists(), again.Covered)
		}
		if _, ok := again.FramesAt(0x1030); !ok {
			t.Errorf("%s: written back without the frames of its addresses", name)
		}
	}
	e := testEntry()
	e.Covered, e.runs, e.lists = nil, nil, nil
	b := encodeV3(testKey, e)
	b = b[:len(b)-3] // no counts of covered spans, frame lists and runs
	b[len(magic)] = 1
	binary.LittleEndian.PutUint64(b[len(magic)+4:], uint64(len(b)-headerSize))
	binary.LittleEndian.PutUint32(b[len(magic)+12:], crc32.Checksum(b[headerSize:], castagnoli()))
	got, err := decode(testKey, b)
	if err == nil {
		got.materialize()
	}
	if err != nil || !reflect.DeepEqual(got, e) {
		t.Errorf("version 1 entry: %v, %+v", err, got)
	}
}

// AddFunctions merges spans and runs in address order, shares equal
// frame lists, and drops the addresses of Frames it covers.
func TestAddFunctions(t *testing.T) {
	e := testEntry()
	main := []symbol.Frame{{Function: "main", File: "/src/a.c", Line: 39}}
	g := []symbol.Frame{{Function: "g", File: "/src/g.c", Line: 1}}
	e.AddFunctions([]Span{{0x0800, 0x0900}, {0x2000, 0x2010}}, []symbol.FrameRange{
		{Lo: 0x0800, Hi: 0x0810, Frames: g},
		{Lo: 0x0810, Hi: 0x0820, Frames: main},
		{Lo: 0x0830, Hi: 0x0840, Frames: slices.Clone(g)},
		{Lo: 0x2000, Hi: 0x2004, Frames: main},
	})
	if want := []Span{{0x0800, 0x0900}, {0x1000, 0x1020}, {0x1020, 0x1120}, {0x2000, 0x2010}}; !slices.Equal(e.Covered, want) {
		t.Errorf("Covered %v, want %v", e.Covered, want)
	}
	if e.NumFrameLists() != 5 {
		t.Errorf("%d frame lists, want 5 (the 3 before, and g and main once each)", e.NumFrameLists())
	}
	if _, ok := e.Frames[0x2000]; ok {
		t.Error("an address of Frames the spans cover was kept")
	}
	if _, err := decode(testKey, encode(testKey, e)); err != nil {
		t.Fatalf("entry after AddFunctions does not decode: %v", err)
	}
	for va, want := range map[uint64][]symbol.Frame{0x0805: g, 0x0815: main, 0x0835: g, 0x0825: nil, 0x2002: main, 0x2008: nil} {
		if fr, ok := e.FramesAt(va); !ok || !slices.Equal(fr, want) {
			t.Errorf("FramesAt(%#x) = %v, %v; want %v", va, fr, ok, want)
		}
	}

	// Out of order; spans overlapping those covered, or each other, are
	// left out with their runs, as is a run in no span.
	covered, runs := slices.Clone(e.Covered), e.NumRuns()
	e.AddFunctions([]Span{{0x3000, 0x3010}, {0x2008, 0x2020}, {0x0f00, 0x1010}, {0x3008, 0x3018}, {0x2800, 0x2810}}, []symbol.FrameRange{
		{Lo: 0x2800, Hi: 0x2808, Frames: g},
		{Lo: 0x2010, Hi: 0x2018, Frames: g},
		{Lo: 0x0f00, Hi: 0x0f08, Frames: g},
		{Lo: 0x3008, Hi: 0x300c, Frames: g},
		{Lo: 0x4000, Hi: 0x4004, Frames: g},
	})
	if want := append(slices.Clone(covered), Span{0x2800, 0x2810}, Span{0x3000, 0x3010}); !slices.Equal(e.Covered, want) {
		t.Errorf("Covered %v, want %v", e.Covered, want)
	}
	if e.NumRuns() != runs+2 {
		t.Errorf("%d runs, want %d: those in the spans kept", e.NumRuns(), runs+2)
	}
	if _, err := decode(testKey, encode(testKey, e)); err != nil {
		t.Fatalf("entry after AddFunctions does not decode: %v", err)
	}
}

// fuzzSeeds are entries to start fuzzing from.
func fuzzSeeds() [][]byte {
	return [][]byte{
		encode(testKey, testEntry()),
		encode(testKey, &Entry{}),
		encode(testKey, &Entry{Source: "dynsym", NoLines: true, Symbols: []symbol.Symbol{{Name: "f", Addr: 1, Size: 2}}}),
		encode(testKey, manyRuns(3*runBlockLen+5)),
		encode(testKey, manyAddrs(3*addrBlockLen+1)),
		withDeltas(encode(testKey, testEntry()), map[uint64][]symbol.Frame{
			0x5000: {{Function: "late", File: "/src/c.c", Line: 3}},
			0x5008: {},
			0x1030: {{Function: "other", File: "/src/a.c", Line: 1}}, // known: kept as it was
		}, map[uint64][]symbol.Frame{0x6000: {{Function: "later", File: "/src/c.c", Line: 9}, {Function: "late", File: "/src/c.c", Line: 4}}}),
	}
}

// withDeltas returns the entry file b with a delta of each of deltas
// appended.
func withDeltas(b []byte, deltas ...map[uint64][]symbol.Frame) []byte {
	sum := binary.LittleEndian.Uint32(b[headerSize-4:])
	for _, d := range deltas {
		b = append(b, encodeDelta(sum, d)...)
	}
	return b
}

func FuzzDecode(f *testing.F) {
	for _, b := range fuzzSeeds() {
		f.Add(b)
	}
	f.Add([]byte(magic))
	f.Fuzz(checkDecode)
}

// FuzzDecodeDeltas fuzzes what follows a sound entry's payload: the
// deltas later recordings appended, and whatever else may lie there.
func FuzzDecodeDeltas(f *testing.F) {
	base := encode(testKey, testEntry())
	f.Add([]byte(nil))
	f.Add(withDeltas(base, map[uint64][]symbol.Frame{0x5000: {{Function: "f", File: "g", Line: 1}}})[len(base):])
	f.Add(withDeltas(base, map[uint64][]symbol.Frame{0x5000: {}}, map[uint64][]symbol.Frame{0x7000: {{Function: "h"}}})[len(base):])
	f.Add([]byte(deltaMagic))
	f.Fuzz(func(t *testing.T, tail []byte) {
		checkDecode(t, append(slices.Clip(base), tail...))
	})
}

// FuzzDecodeDeltaPayload fuzzes a delta's payload under a matching
// header, as FuzzDecodePayload does an entry's.
func FuzzDecodeDeltaPayload(f *testing.F) {
	base := encode(testKey, testEntry())
	sum := binary.LittleEndian.Uint32(base[headerSize-4:])
	f.Add(encodeDelta(sum, map[uint64][]symbol.Frame{0x5000: {{Function: "f", File: "g", Line: 1}}, 0x5001: {}})[deltaHeaderSize:])
	f.Fuzz(func(t *testing.T, p []byte) {
		b := append(slices.Clip(base), deltaMagic...)
		b = binary.LittleEndian.AppendUint64(b, uint64(len(p)))
		b = binary.LittleEndian.AppendUint32(b, crc32.Checksum(p, castagnoli()))
		checkDecode(t, append(b, p...))
	})
}

// FuzzDecodePayload fuzzes what follows an entry's header, the header
// made to match it: mutated under its checksum, the rest of an entry is
// what Get checks field by field, and what lookups of an entry read
// decode.
func FuzzDecodePayload(f *testing.F) {
	for _, b := range fuzzSeeds() {
		f.Add(b[headerSize:])
	}
	f.Fuzz(func(t *testing.T, p []byte) {
		b := append([]byte(magic), 0, 0, 0, 0)
		binary.LittleEndian.PutUint32(b[len(magic):], version)
		b = binary.LittleEndian.AppendUint64(b, uint64(len(p)))
		b = binary.LittleEndian.AppendUint32(b, crc32.Checksum(p, castagnoli()))
		checkDecode(t, append(b, p...))
	})
}

// checkDecode checks what decode makes of b: an error wrapping
// ErrCorrupt, or an entry whose lookups answer as the entry decoded
// whole does, and that encodes back to itself.
func checkDecode(t *testing.T, b []byte) {
	e, err := decode(testKey, b)
	if err != nil {
		if !errors.Is(err, ErrCorrupt) {
			t.Fatalf("error %v does not wrap ErrCorrupt", err)
		}
		if e == nil {
			return
		}
		// A bad delta: the entry without it is checked as any.
		if !e.file.bad {
			t.Fatalf("entry returned with error %v not marked bad", err)
		}
	}
	if symbol.NewTable(e.Symbols).Len() != len(e.Symbols) {
		t.Fatal("decoded symbols are not a table")
	}
	full, err2 := decode(testKey, b)
	if (err2 == nil) != (err == nil) || full == nil {
		t.Fatalf("decoded once with %v, then with %v", err, err2)
	}
	// A block of runs or lists of an entry of version 4 is checked
	// when a lookup reaches it: one found bad (here, or by materialize)
	// has the entry answer nothing from its runs, and be decoded whole
	// and written without them.
	soundRanges := full.lazy == nil || full.lazy.checkAll()
	sound := soundRanges && (full.lazyFrames == nil || full.lazyFrames.checkAll())
	full.materialize()
	var vas []uint64
	if !sound {
		for _, c := range e.Covered {
			vas = append(vas, c.Lo-1, c.Lo, c.Hi-1, c.Hi)
		}
		if e.lazy != nil {
			for _, b := range e.lazy.blocks {
				vas = append(vas, b.at-1, b.at, b.at+1)
			}
		}
		if e.lazyFrames != nil {
			for _, b := range e.lazyFrames.blocks {
				vas = append(vas, b.at-1, b.at, b.at+1)
			}
		}
		for _, va := range vas {
			e.FramesAt(va) // answers something or nothing; no panic
		}
		if !soundRanges && (full.NumRuns() != 0 || full.NumFrameLists() != 0 || full.Covered != nil) {
			t.Fatal("an entry of a bad block decoded whole with runs")
		}
		vas = vas[:0]
	}
	// The entry as read (its runs and lists undecoded) answers
	// every address of the runs, of the covered spans and around
	// them as the entry decoded whole does.
	for _, r := range full.runs {
		vas = append(vas, r.Lo-1, r.Lo, r.Hi-1, r.Hi)
		if !slices.Equal(full.lists[r.Frames], mustFramesAt(t, full, r.Lo)) && !hasFrames(full, r.Lo) {
			t.Fatalf("the run [%#x, %#x) does not give list %d", r.Lo, r.Hi, r.Frames)
		}
	}
	for _, c := range full.Covered {
		vas = append(vas, c.Lo-1, c.Lo, c.Hi-1, c.Hi)
	}
	for va := range full.Frames {
		vas = append(vas, va-1, va, va+1)
	}
	for _, va := range vas {
		if !sound {
			break
		}
		fr, ok := e.FramesAt(va)
		want, wantOK := full.FramesAt(va)
		if ok != wantOK || !slices.Equal(fr, want) {
			t.Fatalf("FramesAt(%#x) = %v, %v; decoded whole, %v, %v", va, fr, ok, want, wantOK)
		}
	}
	// What decodes encodes back to what decodes the same, the
	// same bytes whether its runs and lists were decoded or not.
	enc := encode(testKey, e)
	if !bytes.Equal(enc, encode(testKey, full)) {
		t.Fatal("an entry encodes otherwise once its runs and lists are decoded")
	}
	e2, err := decode(testKey, enc)
	if err == nil {
		e2.materialize()
		e2.file, full.file = fileRef{}, fileRef{}
	}
	if err != nil || !reflect.DeepEqual(full, e2) {
		t.Fatalf("re-encoded entry: %v, %+v != %+v", err, e2, full)
	}
}

// mustFramesAt returns the frames e knows at va, failing t if it knows
// none.
func mustFramesAt(t *testing.T, e *Entry, va uint64) []symbol.Frame {
	t.Helper()
	fr, ok := e.FramesAt(va)
	if !ok {
		t.Fatalf("FramesAt(%#x) does not know the address of a run", va)
	}
	return fr
}

// hasFrames reports whether e.Frames holds va.
func hasFrames(e *Entry, va uint64) bool {
	_, ok := e.Frames[va]
	return ok
}
