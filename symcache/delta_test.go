package symcache

import (
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"nsprof/symbol"
)

// stat returns what stat says of the entry file of key, failing t when
// there is none.
func stat(t *testing.T, c *Cache, key string) os.FileInfo {
	t.Helper()
	st, err := os.Stat(filepath.Join(c.Dir(), key))
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// getOK returns the entry of key, failing t on an error or none.
func getOK(t *testing.T, c *Cache, key string) *Entry {
	t.Helper()
	e, err := c.Get(key)
	if err != nil || e == nil {
		t.Fatalf("Get = %v, %v", e, err)
	}
	return e
}

// Frames added to an entry read from the cache are appended to its file
// (the same file, grown by a delta, not written anew), and read back
// merged with it; an address the entry knew keeps its frames.
func TestAddFramesAppends(t *testing.T) {
	c := openTest(t, Options{})
	if err := c.Put(testKey, testEntry()); err != nil {
		t.Fatal(err)
	}
	before := stat(t, c, testKey)
	e := getOK(t, c, testKey)
	add := map[uint64][]symbol.Frame{
		0x5000: {{Function: "late", File: "/src/c.c", Line: 3}},
		0x5008: {},
		0x1030: {{Function: "other", File: "/src/a.c", Line: 1}},
		0x1000: {{Function: "covered", File: "/src/s.S", Line: 1}}, // in a run
	}
	if err := c.AddFrames(testKey, e, add); err != nil {
		t.Fatal(err)
	}
	after := stat(t, c, testKey)
	if !os.SameFile(before, after) || after.Size() <= before.Size() {
		t.Fatalf("AddFrames wrote the entry anew (%d bytes, then %d), not a delta", before.Size(), after.Size())
	}
	want := testEntry()
	want.Frames[0x5000], want.Frames[0x5008] = add[0x5000], []symbol.Frame{}
	got := getOK(t, c, testKey)
	if got.file.deltas != 1 {
		t.Errorf("%d deltas read, want 1", got.file.deltas)
	}
	got.materialize()
	got.file, want.file = fileRef{}, fileRef{}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Get after AddFrames = %+v, want %+v", got, want)
	}
	// The entry added to in memory answers as the one read back.
	for va, fr := range want.Frames {
		if g, ok := e.FramesAt(va); !ok || !slices.Equal(g, fr) {
			t.Errorf("the entry added to: FramesAt(%#x) = %v, %v, want %v", va, g, ok, fr)
		}
	}
	if s := c.Stats(); s.Written != 2 || s.Corrupt != 0 {
		t.Errorf("Stats = %+v, want 2 written, none corrupt", s)
	}
}

// Deltas adding up to more than the entry, or too many of them, have the
// entry written whole again, with all of their frames, and none after.
func TestAddFramesRewrites(t *testing.T) {
	c := openTest(t, Options{})
	if err := c.Put(testKey, testEntry()); err != nil {
		t.Fatal(err)
	}
	payload := uint64(stat(t, c, testKey).Size()) - uint64(headerSize)
	e := getOK(t, c, testKey)
	rewritten := false
	for i := range 40 {
		before := stat(t, c, testKey)
		va := uint64(0x10000 + 16*i)
		if err := c.AddFrames(testKey, e, map[uint64][]symbol.Frame{va: {{Function: "f", File: "/src/f.c", Line: i + 1}}}); err != nil {
			t.Fatal(err)
		}
		if !os.SameFile(before, stat(t, c, testKey)) {
			rewritten = true
			if e.file.deltas != 0 || e.file.payload <= payload {
				t.Errorf("after a rewrite: %+v, the payload of %d bytes before", e.file, payload)
			}
			break
		}
		if uint64(e.file.deltaBytes) > payload {
			t.Fatalf("deltas of %d bytes after an entry of %d", e.file.deltaBytes, payload)
		}
	}
	if !rewritten {
		t.Fatal("40 deltas and the entry never written whole")
	}
	got := getOK(t, c, testKey)
	if got.file.deltas != 0 {
		t.Errorf("%d deltas after the rewrite", got.file.deltas)
	}
	for va, fr := range e.Frames {
		if g, ok := got.FramesAt(va); !ok || !slices.Equal(g, fr) {
			t.Errorf("after the rewrite: FramesAt(%#x) = %v, %v, want %v", va, g, ok, fr)
		}
	}
	// Too many deltas, each small: written whole too.
	e.file.deltas = maxDeltas
	before := stat(t, c, testKey)
	if err := c.AddFrames(testKey, e, map[uint64][]symbol.Frame{0x90000: {}}); err != nil {
		t.Fatal(err)
	}
	if os.SameFile(before, stat(t, c, testKey)) {
		t.Error("an entry of maxDeltas deltas was given another")
	}
}

// A delta that cannot be used is rejected with an error naming it; the
// entry comes back with the deltas before it, and is written again
// without it.
func TestBadDelta(t *testing.T) {
	base := encode(testKey, testEntry())
	sum := binary.LittleEndian.Uint32(base[headerSize-4:])
	good := encodeDelta(sum, map[uint64][]symbol.Frame{0x5000: {{Function: "late", File: "/src/c.c", Line: 3}}})
	bad := encodeDelta(sum, map[uint64][]symbol.Frame{0x6000: {{Function: "lost", File: "/src/c.c", Line: 4}}})
	other := encodeDelta(sum+1, map[uint64][]symbol.Frame{0x6000: {{Function: "lost", File: "/src/c.c", Line: 4}}})
	flipped := slices.Clone(bad)
	flipped[len(flipped)-2] ^= 0x10
	for _, tc := range []struct {
		name, tail, want string
	}{
		{"truncated", string(bad[:len(bad)-1]), "delta 1 at byte %d: truncated"},
		{"truncated header", string(bad[:deltaHeaderSize-2]), "delta 1 at byte %d: truncated"},
		{"flipped byte", string(flipped), "delta 1 at byte %d: checksum mismatch"},
		{"another entry's", string(other), "delta 1 at byte %d: appended to another entry"},
		{"garbage", "not a delta at all, but long enough", "delta 1 at byte %d: no delta header"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := openTest(t, Options{})
			path := filepath.Join(c.Dir(), testKey)
			file := slices.Concat(base, good, []byte(tc.tail))
			if err := os.WriteFile(path, file, 0o600); err != nil {
				t.Fatal(err)
			}
			e, err := c.Get(testKey)
			want := strings.Replace(tc.want, "%d", strconv.Itoa(len(base)+len(good)), 1)
			if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), want) {
				t.Fatalf("Get: error %v, want one wrapping ErrCorrupt saying %q", err, want)
			}
			if e == nil {
				t.Fatal("Get: no entry; want the entry with the good delta")
			}
			if _, ok := e.FramesAt(0x5000); !ok {
				t.Error("the good delta before the bad one was not merged")
			}
			if _, ok := e.FramesAt(0x6000); ok {
				t.Error("the bad delta was merged")
			}
			if c.Stats().Corrupt != 1 {
				t.Errorf("Stats = %+v, want 1 corrupt", c.Stats())
			}
			// Written again without it: read back clean, the good
			// delta's frames kept.
			e2 := getOK(t, c, testKey)
			if _, ok := e2.FramesAt(0x5000); !ok || e2.file.deltas != 0 {
				t.Errorf("rewritten entry: 0x5000 known %v, %d deltas", ok, e2.file.deltas)
			}
		})
	}
	// An entry of version 2 has nothing after its payload.
	v2 := encodeAs(testKey, testEntry(), 2, sortedAddrs((*stringTable).appendAddrFrames), appendV3)
	if _, err := decode(testKey, v2); err != nil {
		t.Fatalf("version 2 entry: %v", err)
	}
	if e, err := decode(testKey, append(v2, good...)); e != nil || !errors.Is(err, ErrCorrupt) {
		t.Errorf("version 2 entry with a delta = %v, %v; want it corrupt", e, err)
	}
}

// A delta is appended only to the file the entry was read from: one
// replaced since (another recorder wrote the entry whole) has the entry
// written whole, and a symbolic link planted under the name is not
// written through.
func TestAddFramesFileReplaced(t *testing.T) {
	c := openTest(t, Options{})
	if err := c.Put(testKey, testEntry()); err != nil {
		t.Fatal(err)
	}
	e := getOK(t, c, testKey)
	replaced := testEntry()
	replaced.LoadedAt++
	if err := c.Put(testKey, replaced); err != nil {
		t.Fatal(err)
	}
	if err := c.AddFrames(testKey, e, map[uint64][]symbol.Frame{0x5000: {}}); err != nil {
		t.Fatal(err)
	}
	got := getOK(t, c, testKey)
	if _, ok := got.FramesAt(0x5000); !ok || got.file.deltas != 0 || got.LoadedAt != e.LoadedAt {
		t.Errorf("after AddFrames to a replaced file: 0x5000 known %v, %d deltas, loaded at %d; want e written whole", ok, got.file.deltas, got.LoadedAt)
	}

	path := filepath.Join(c.Dir(), testKey)
	victim := filepath.Join(t.TempDir(), "victim")
	keep := encode(testKey, testEntry())
	if err := os.WriteFile(victim, keep, 0o600); err != nil {
		t.Fatal(err)
	}
	e = getOK(t, c, testKey)
	os.Remove(path)
	if err := os.Symlink(victim, path); err != nil {
		t.Fatal(err)
	}
	e.file = fileRef{payload: uint64(len(keep) - headerSize), sum: binary.LittleEndian.Uint32(keep[headerSize-4:])}
	if err := c.AddFrames(testKey, e, map[uint64][]symbol.Frame{0x7000: {}}); err == nil {
		t.Error("AddFrames through a symbolic link: no error")
	}
	if b, _ := os.ReadFile(victim); !slices.Equal(b, keep) {
		t.Fatal("AddFrames wrote through a planted symbolic link")
	}
}

// Recorders appending to one entry at once each append whole deltas: the
// entry read after holds the frames of every delta, none rejected.
func TestAddFramesConcurrent(t *testing.T) {
	c := openTest(t, Options{})
	big := manyAddrs(4000) // a payload the deltas stay under
	if err := c.Put(testKey, big); err != nil {
		t.Fatal(err)
	}
	const writers, rounds = 4, 8
	var wg sync.WaitGroup
	for w := range writers {
		e := getOK(t, c, testKey)
		wg.Go(func() {
			for r := range rounds {
				va := uint64(0x900000 + 0x1000*w + 16*r)
				if err := c.AddFrames(testKey, e, map[uint64][]symbol.Frame{va: {{Function: "f", File: "/src/f.c", Line: w*100 + r}}}); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	e, err := c.Get(testKey)
	if err != nil || e == nil {
		t.Fatalf("Get after concurrent appends = %v, %v", e, err)
	}
	if e.file.deltas != writers*rounds {
		t.Errorf("%d deltas read, want %d", e.file.deltas, writers*rounds)
	}
	for w := range writers {
		for r := range rounds {
			va := uint64(0x900000 + 0x1000*w + 16*r)
			if fr, ok := e.FramesAt(va); !ok || len(fr) != 1 || fr[0].Line != w*100+r {
				t.Errorf("FramesAt(%#x) = %v, %v", va, fr, ok)
			}
		}
	}
}
