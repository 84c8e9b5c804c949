package main

import (
	"path/filepath"
	"testing"

	"nsprof/internal/testutils"
)

// countReleases has releasePages count its calls for the rest of the
// test instead of releasing anything.
func countReleases(t *testing.T) *int {
	t.Helper()
	n := new(int)
	old := releasePages
	releasePages = func() { *n++ }
	t.Cleanup(func() { releasePages = old })
	return n
}

// TestCommandsReleasePages checks that every command lets go of the
// binary's pages once its flags are parsed, and that a recording does
// again once set up and before its symbol bundle (package exepages, whose
// own test checks that the pages go).
func TestCommandsReleasePages(t *testing.T) {
	dir := t.TempDir()
	c := writeTestCapture(t, dir, "a.syscap")

	n := countReleases(t)
	if _, stderr, status := nsprof(t, nil, "report", c); status != 0 {
		t.Fatalf("report: status %d: %s", status, stderr)
	}
	if *n != 1 {
		t.Errorf("report released the binary's pages %d times, want 1", *n)
	}
	*n = 0
	if _, _, status := nsprof(t, nil, "report", "--no-such-flag", c); status == 0 || *n != 0 {
		t.Errorf("a refused flag: status %d, %d releases (want none: the command did not run)", status, *n)
	}

	testutils.RequireRoot(t, "recording needs root")
	*n = 0
	out := filepath.Join(dir, "r.syscap")
	if _, stderr, status := nsprof(t, nil, "record", "--no-disk", "--no-network", "-F", "99", "-o", out, "--", "true"); status != 0 {
		t.Fatalf("record: status %d: %s", status, stderr)
	}
	if *n != 3 {
		t.Errorf("record released the binary's pages %d times, want 3 (command, set up, bundle)", *n)
	}
}
