package capture

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"

	"nsprof/internal/testutils"
)

func gz(t *testing.T, data []byte) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	zw.Write(data)
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestInflate checks Inflate against what was compressed, also when the
// trailer's size is wrong (it is only a hint), for several members, and
// that damage is an error.
func TestInflate(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	text := make([]byte, 300_000)
	for i := range text {
		text[i] = "abc \n"[rng.IntN(5)]
	}
	for _, n := range []int{0, 1, 511, 512, 513, 100_000, len(text)} {
		z := gz(t, text[:n])
		got, err := Inflate("f.gz", z)
		if err != nil || !bytes.Equal(got, text[:n]) {
			t.Fatalf("%d bytes: got %d bytes, %v", n, len(got), err)
		}
		for _, lie := range []uint32{0, 1, uint32(n) + 1, uint32(n) * 2, 1 << 31} {
			bad := bytes.Clone(z)
			binary.LittleEndian.PutUint32(bad[len(bad)-4:], lie)
			// The trailer's size is checked after the data, so a
			// wrong one is an error, never a wrong result.
			if got, err := Inflate("f.gz", bad); err == nil && !bytes.Equal(got, text[:n]) {
				t.Fatalf("%d bytes, trailer says %d: wrong data without an error", n, lie)
			}
		}
	}
	two := append(gz(t, text[:1000]), gz(t, text[1000:5000])...)
	if got, err := Inflate("f.gz", two); err != nil || !bytes.Equal(got, text[:5000]) {
		t.Fatalf("two members: %d bytes, %v", len(got), err)
	}
	z := gz(t, text)
	if _, err := Inflate("f.gz", z[:len(z)/2]); err == nil {
		t.Error("truncated data: no error")
	}
}

// TestInflateBomb checks that a gzip bomb is refused at its ratio bound
// with an error naming the file, that the parsed files have their format
// bounds, and that data within both decompresses.
func TestInflateBomb(t *testing.T) {
	bomb := testutils.GzipBomb(nil, []byte{0}, 300<<20)
	for _, path := range []string{"/proc/kallsyms.gz", LinesFile + ".gz", "/proc/cpuinfo.gz"} {
		b, err := Inflate(path, bomb)
		var ie *InflateError
		if !errors.As(err, &ie) || ie.Limit != MaxInflateRatio*int64(len(bomb)) || !strings.Contains(err.Error(), path) {
			t.Errorf("%s: %d bytes of a 300 MiB bomb: %d bytes, error %v, want an InflateError at %d:1", path, len(bomb), len(b), err, MaxInflateRatio)
		}
	}
	for path, want := range map[string]int64{"/proc/kallsyms": 128 << 20, SymbolsFile + ".gz": 256 << 20, LinesFile: 256 << 20, "/proc/cpuinfo": 1 << 30} {
		if got := MaxInflated(path, 1<<30); got != want {
			t.Errorf("MaxInflated(%s, 1 GiB) = %d, want %d", path, got, want)
		}
	}
	// Long runs of a small file within 1 MiB are not a bomb.
	if b, err := Inflate("/proc/mounts.gz", gz(t, make([]byte, 1<<20))); err != nil || len(b) != 1<<20 {
		t.Errorf("1 MiB of zeros: %d bytes, %v", len(b), err)
	}
}
