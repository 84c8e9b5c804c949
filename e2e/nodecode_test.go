//go:build linux

package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// With --no-decode the capture has no bundle: the report names addresses
// from the files on this machine, but only from the very file that was
// mapped. Replaced by another binary at the same path, the file is
// refused rather than lending its names.
func TestNoDecodeHostFiles(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "hot")
	copyTo(t, cFixture(t, false), bin)
	capture := filepath.Join(dir, "capture.syscap")
	cmd := exec.Command(nsprofBin, "record", "--no-decode", "-o", capture, "--no-cpu", "--no-memory", "--no-disk", "--no-network", "--", bin, "2")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("nsprof record: %v\n%s", err, b)
	}
	if files := nsprof(t, "dump", capture, "--files"); strings.Contains(files, "__symbols__") {
		t.Fatalf("--no-decode capture has a symbol bundle:\n%s", files)
	}
	checkChainFrom(t, capture, "host", cChain, "dbg_hot_step")

	// The same path now holds another program (the C++ variant).
	if err := os.Remove(bin); err != nil {
		t.Fatal(err)
	}
	copyTo(t, cFixture(t, true), bin)
	r := reportJSON(t, capture)
	for _, g := range r.Groups {
		for _, f := range g.Functions {
			if strings.Contains(f.Name, "Burner") || strings.HasPrefix(f.Name, "dbg_") {
				t.Errorf("after replacing %s: function %s named from a file that was not the one recorded", bin, f.Name)
			}
		}
	}
}
