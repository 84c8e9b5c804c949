package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCatDamagedThenGood merges a damaged capture and a good one, in that
// order: the good one is merged whole after the damaged one's frames
// before the damage, and cat names the damaged input and exits 1.
func TestCatDamagedThenGood(t *testing.T) {
	dir := t.TempDir()
	good := writeTestCapture(t, dir, "good.syscap")
	data, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	damaged := filepath.Join(dir, "damaged.syscap")
	if err := os.WriteFile(damaged, data[:len(data)-5], 0o600); err != nil { // inside the EXIT frame
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out.syscap")
	_, stderr, status := nsprof(t, nil, "cat", damaged, good, "-o", out)
	if status != 1 || !strings.Contains(stderr, damaged+": cat: capture: ") || !strings.Contains(stderr, "at offset") || strings.Contains(stderr, good+":") {
		t.Errorf("status %d, stderr %q; want 1 and the damage of %s only", status, stderr, damaged)
	}
	s, _, status := nsprof(t, nil, "dump", "--summary", out)
	// The good input's EXIT, and both inputs' 2 PROCESS frames each.
	if status != 0 || !strings.Contains(s, "\nEXIT                    1 ") || !strings.Contains(s, "\nPROCESS                 4 ") {
		t.Errorf("merged capture (status %d):\n%s", status, s)
	}
}

// TestExportDamaged exports a damaged capture: the samples before the
// damage are written, and the status is 1 naming the file and offset, or 0
// with a warning under --partial.
func TestExportDamaged(t *testing.T) {
	dir := t.TempDir()
	good := writeTestCapture(t, dir, "good.syscap")
	data, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	damaged := filepath.Join(dir, "damaged.syscap")
	if err := os.WriteFile(damaged, data[:len(data)-5], 0o600); err != nil {
		t.Fatal(err)
	}
	out, stderr, status := nsprof(t, nil, "export", "--format", "folded", damaged)
	if status != 1 || out == "" || !strings.HasPrefix(stderr, "nsprof: "+damaged+": capture: ") || !strings.Contains(stderr, "at offset") || !strings.Contains(stderr, "exported the 1 samples before the damage") {
		t.Errorf("status %d, output %q, stderr %q", status, out, stderr)
	}
	partial, stderr, status := nsprof(t, nil, "export", "--partial", "--format", "folded", damaged)
	if status != 0 || partial != out || !strings.HasPrefix(stderr, "nsprof: warning: "+damaged+": capture: ") {
		t.Errorf("--partial: status %d, output %q, stderr %q", status, partial, stderr)
	}
	for _, view := range []string{"--logs", "--summary"} {
		_, stderr, status := nsprof(t, nil, "report", view, damaged)
		if status != 1 || !strings.Contains(stderr, damaged+": capture: ") {
			t.Errorf("report %s: status %d, stderr %q", view, status, stderr)
		}
	}
}
