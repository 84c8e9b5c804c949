package capture

import (
	"bytes"
	"strings"
	"testing"
)

// TestPutPadded checks putPadded against copy and clear, for every string
// length around its word-store path and every buffer size from one byte
// more than the string, aligned or not, into buffers full of garbage whose
// bytes past the end must stay untouched.
func TestPutPadded(t *testing.T) {
	src := "abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJ"
	for n := 0; n <= 40; n++ {
		s := src[:n]
		for size := n + 1; size <= n+17; size++ {
			got := bytes.Repeat([]byte{0xa5}, size+8)
			putPadded(got[:size], s)
			want := bytes.Repeat([]byte{0xa5}, size+8)
			clear(want[copy(want[:size], s):size])
			if !bytes.Equal(got, want) {
				t.Errorf("putPadded(len %d, %q) = %x, want %x", size, s, got, want)
			}
		}
	}
}

// TestSameString covers equal strings at different addresses, which must
// still compare equal, and prefixes of one another, which must not.
func TestSameString(t *testing.T) {
	a := "bench-mark"
	b := strings.Clone(a)
	for _, c := range []struct {
		x, y string
		want bool
	}{
		{a, a, true}, {a, b, true}, {a, a[:4], false}, {"", "", true}, {a, "bench-marx", false},
	} {
		if got := sameString(c.x, c.y); got != c.want {
			t.Errorf("sameString(%q, %q) = %v, want %v", c.x, c.y, got, c.want)
		}
	}
}
