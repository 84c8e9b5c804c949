package analyze

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"math/rand/v2"
	"testing"
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

// TestInflate checks inflate against what was compressed, also when the
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
		got, err := inflate(z)
		if err != nil || !bytes.Equal(got, text[:n]) {
			t.Fatalf("%d bytes: got %d bytes, %v", n, len(got), err)
		}
		for _, lie := range []uint32{0, 1, uint32(n) + 1, uint32(n) * 2, 1 << 31} {
			bad := bytes.Clone(z)
			binary.LittleEndian.PutUint32(bad[len(bad)-4:], lie)
			// The trailer's size is checked after the data, so a
			// wrong one is an error, never a wrong result.
			if got, err := inflate(bad); err == nil && !bytes.Equal(got, text[:n]) {
				t.Fatalf("%d bytes, trailer says %d: wrong data without an error", n, lie)
			}
		}
	}
	two := append(gz(t, text[:1000]), gz(t, text[1000:5000])...)
	if got, err := inflate(two); err != nil || !bytes.Equal(got, text[:5000]) {
		t.Fatalf("two members: %d bytes, %v", len(got), err)
	}
	z := gz(t, text)
	if _, err := inflate(z[:len(z)/2]); err == nil {
		t.Error("truncated data: no error")
	}
}
