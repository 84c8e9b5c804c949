package symcache

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// TestBlob writes a blob, reads it back, and checks that a damaged,
// planted or foreign one is ignored as corrupt, and that Trim bounds
// blobs as it bounds entries.
func TestBlob(t *testing.T) {
	c := openTest(t, Options{MaxBytes: 1 << 20})
	key := BlobKey("kallsyms", "boot", "notes")
	if !validKey(key) || key == BlobKey("kallsyms", "boot2", "notes") || key == BlobKey("kallsymsboot", "notes") {
		t.Fatalf("BlobKey gives %q, or the same key for other parts", key)
	}
	if b, err := c.GetBlob(key); b != nil || err != nil {
		t.Fatalf("GetBlob of none = %q, %v", b, err)
	}
	data := bytes.Repeat([]byte("ffffffff81000000 T _stext\n"), 1000)
	if err := c.PutBlob(key, data); err != nil {
		t.Fatal(err)
	}
	if b, err := c.GetBlob(key); err != nil || !bytes.Equal(b, data) {
		t.Fatalf("GetBlob = %d bytes, %v; want the %d written", len(b), err, len(data))
	}
	path := filepath.Join(c.Dir(), key)
	st, err := os.Stat(path)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("blob file %v, %v: want mode 0600", st, err)
	}
	good, _ := os.ReadFile(path)
	plant := func(b []byte) {
		os.Remove(path)
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cases := map[string]func(){
		"flipped byte": func() {
			b := bytes.Clone(good)
			b[len(b)-2] ^= 0x40
			plant(b)
		},
		"truncated": func() { plant(good[:len(good)-1]) },
		"no header": func() { plant(data) },
		"symlink": func() {
			os.Remove(path)
			other := filepath.Join(t.TempDir(), "other")
			os.WriteFile(other, good, 0o600)
			if err := os.Symlink(other, path); err != nil {
				t.Fatal(err)
			}
		},
	}
	if os.Geteuid() == 0 {
		cases["other owner"] = func() {
			plant(good)
			if err := os.Chown(path, 65534, 65534); err != nil {
				t.Fatal(err)
			}
		}
	}
	for name, plant := range cases {
		plant()
		if b, err := c.GetBlob(key); b != nil || !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: GetBlob = %d bytes, %v; want ignored as corrupt", name, len(b), err)
		}
		if m, err := c.MapBlob(key); m != nil || !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: MapBlob = %v, %v; want ignored as corrupt", name, m, err)
		}
	}
	// Blobs count in the size bound: two of 600 kB in a 1 MiB cache.
	os.Remove(path)
	big := bytes.Repeat([]byte{'x'}, 600<<10)
	for _, k := range []string{BlobKey("a"), BlobKey("b")} {
		if err := c.PutBlob(k, big); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := c.Trim(); err != nil || n != 1 {
		t.Errorf("Trim removed %d (%v), want 1 of the two blobs", n, err)
	}
}

// TestMapBlob: a blob mapped holds what was written, without its bytes
// read into the heap, and none when there is none.
func TestMapBlob(t *testing.T) {
	c := openTest(t, Options{MaxBytes: 64 << 20})
	key := BlobKey("kallsyms", "mapped")
	if m, err := c.MapBlob(key); m != nil || err != nil {
		t.Fatalf("MapBlob of none = %v, %v", m, err)
	}
	data := bytes.Repeat([]byte("ffffffff81000000 T _stext\n"), 160_000) // 4 MB
	if err := c.PutBlob(key, data); err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	m, err := c.MapBlob(key)
	runtime.ReadMemStats(&after)
	if err != nil || m == nil {
		t.Fatalf("MapBlob = %v, %v", m, err)
	}
	if n := after.TotalAlloc - before.TotalAlloc; n > 64<<10 {
		t.Errorf("MapBlob allocated %d bytes for a blob of %d: want it mapped, not read", n, len(data))
	}
	if !bytes.Equal(m.Bytes(), data) {
		t.Fatalf("MapBlob gives %d bytes, want the %d written", len(m.Bytes()), len(data))
	}
	if err := m.Close(); err != nil || m.Bytes() != nil {
		t.Errorf("Close = %v, bytes %d after", err, len(m.Bytes()))
	}
}

// FuzzDecodeBlob decodes arbitrary bytes as a blob: no panic, and what
// decodes is exactly what encodes to the input.
func FuzzDecodeBlob(f *testing.F) {
	f.Add(encodeBlob([]byte("ffffffff81000000 T _stext\n")))
	f.Add(encodeBlob(nil))
	f.Add([]byte("nsprof-blob 2 -1 x\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		data, err := decodeBlob(b)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error %v does not wrap ErrCorrupt", err)
			}
			return
		}
		if !bytes.Equal(encodeBlob(data), b) {
			t.Fatalf("%q decodes to %q, which encodes otherwise", b, data)
		}
	})
}

// TestDecodeBlobDropping: a blob checked a part at a time is checked as
// whole (a byte changed anywhere refused), and every part of it is
// handed to drop once, in order.
func TestDecodeBlobDropping(t *testing.T) {
	data := make([]byte, 1<<20+123)
	for i := range data {
		data[i] = byte(i * 31)
	}
	b := encodeBlob(data)
	const chunk = 64 << 10
	var dropped []byte
	got, err := decodeBlobDropping(b, chunk, func(p []byte) {
		if len(p) != chunk && len(dropped)+len(p) != len(b) {
			t.Errorf("part of %d bytes at %d", len(p), len(dropped))
		}
		dropped = append(dropped, p...)
	})
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("decodeBlobDropping = %d bytes, %v", len(got), err)
	}
	if !bytes.Equal(dropped, b) {
		t.Errorf("parts dropped: %d bytes, not the blob's %d", len(dropped), len(b))
	}
	for _, at := range []int{len(b) - len(data), len(b) / 2, len(b) - 1} {
		bad := bytes.Clone(b)
		bad[at] ^= 1
		if _, err := decodeBlobDropping(bad, chunk, func([]byte) {}); !errors.Is(err, ErrCorrupt) {
			t.Errorf("byte %d changed: %v; want refused as corrupt", at, err)
		}
	}
}
