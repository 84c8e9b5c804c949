//go:build !otlp

package main

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestOTLPCommandsExecSibling checks that nsprof's agent and push run
// nsprof-otlp from the directory of nsprof's own executable with their
// arguments untouched (flags and --help included), and say what is
// missing when it is not there or not executable.
func TestOTLPCommandsExecSibling(t *testing.T) {
	dir := t.TempDir()
	exe := filepath.Join(dir, "nsprof")
	oldExe, oldExec := executable, execOTLP
	t.Cleanup(func() { executable, execOTLP = oldExe, oldExec })
	executable = func() (string, error) { return exe, nil }
	var gotPath string
	var gotArgv []string
	execOTLP = func(path string, argv []string) error {
		gotPath, gotArgv = path, argv
		return nil
	}
	run := func(args ...string) error {
		gotPath, gotArgv = "", nil
		return runIO(context.Background(), args, nil, io.Discard, io.Discard)
	}

	err := run("agent", "--otlp-endpoint", "http://x:4318", "-F", "99")
	if err == nil || !strings.Contains(err.Error(), "nsprof-otlp not found next to "+exe) {
		t.Fatalf("agent without nsprof-otlp: %v, want it named as missing next to %s", err, exe)
	}
	if gotArgv != nil {
		t.Fatalf("executed %v without nsprof-otlp", gotArgv)
	}

	sib := filepath.Join(dir, otlpBinary)
	if err := os.WriteFile(sib, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := run("push", "x.syscap"); err == nil || !strings.Contains(err.Error(), "not an executable file") {
		t.Fatalf("push with a non-executable nsprof-otlp: %v", err)
	}
	if err := os.Chmod(sib, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"agent", "--otlp-endpoint", "http://x:4318", "-F", "99", "--periods", "2"},
		{"push", "x.syscap", "--header", "K=V", "--otlp-endpoint", "http://x:4318"},
		{"agent", "--help"},
	} {
		if err := run(args...); err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		if want := append([]string{otlpBinary}, args...); gotPath != sib || !slices.Equal(gotArgv, want) {
			t.Errorf("%v executed %s %q, want %s %q", args, gotPath, gotArgv, sib, want)
		}
	}
}
