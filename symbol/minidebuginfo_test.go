package symbol

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"nsprof/internal/testutils"
)

// TestCheckXZ compresses data with the real xz at several dictionary
// sizes, and checks that checkXZ accepts them and refuses a forged
// dictionary size.
func TestCheckXZ(t *testing.T) {
	xz := testutils.LookPathOrSkip(t, "xz")
	// Symbol-name-like text that compresses about as well as a
	// MiniDebugInfo ELF does (well under the 64:1 bound).
	var in []byte
	rng := rand.New(rand.NewPCG(1, 2))
	for len(in) < 100000 {
		in = fmt.Appendf(in, "fixture_%x_%x\n", rng.Uint64(), rng.Uint32())
	}
	p := filepath.Join(t.TempDir(), "data")
	if err := os.WriteFile(p, in, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"-0"}, {"-6"}, {"-9"}, {"--lzma2=dict=4KiB"}, {"--block-size=4096"}} {
		out, err := exec.Command(xz, append(args, "-c", p)...).Output()
		if err != nil {
			t.Fatal(err)
		}
		if err := checkXZ(out); err != nil {
			t.Errorf("xz %s: %v", strings.Join(args, " "), err)
		}
		got, err := decompressMiniDebugInfo(out)
		if err != nil || !bytes.Equal(got, in) {
			t.Errorf("xz %s: decompressed %d bytes, %v", strings.Join(args, " "), len(got), err)
		}
		if args[0] == "-0" {
			// The block header follows the 12-byte stream header: size
			// byte, flags, filter id 0x21, props size 1, dict byte.
			forged := bytes.Clone(out)
			i := bytes.Index(forged[12:], []byte{0x21, 0x01})
			if i < 0 {
				t.Fatal("no LZMA2 filter flags found")
			}
			forged[12+i+2] = 40 // 4 GiB
			if _, err := decompressMiniDebugInfo(forged); err == nil || !strings.Contains(err.Error(), "dictionary") {
				t.Errorf("a 4 GiB dictionary: %v", err)
			}
		}
	}
	// Output beyond the ratio is refused.
	big := filepath.Join(t.TempDir(), "zeros")
	if err := os.WriteFile(big, make([]byte, 8<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(xz, "-9", "-c", big).Output()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := decompressMiniDebugInfo(out); err == nil {
		t.Errorf("%d bytes of xz decompressing to 8 MiB were accepted", len(out))
	}
}
