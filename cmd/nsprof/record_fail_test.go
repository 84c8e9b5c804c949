package main

import (
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strings"
	"testing"

	"nsprof/capture"
	"nsprof/internal/testutils"
)

// TestRecordFailureLeavesNoCapture: a recording that fails before it
// starts leaves no file behind, so the retry needs no -f, and a file that
// -f was to replace keeps its contents.
func TestRecordFailureLeavesNoCapture(t *testing.T) {
	dir := t.TempDir()
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "c.syscap")
	for _, tt := range []struct {
		name   string
		args   []string
		stderr string
	}{
		{"missing command", []string{"--", "/nonexistent/nsprof-no-such-command"}, "no such file"},
		{"missing pid", []string{"-p", itoa(gone.Process.Pid)}, itoa(gone.Process.Pid)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"record", "--no-cpu", "--no-memory", "--no-disk", "--no-network", "-o", out}, tt.args...)
			_, stderr, status := nsprof(t, nil, args...)
			if status != 1 || !strings.Contains(stderr, tt.stderr) || !strings.Contains(stderr, "not written") {
				t.Errorf("status %d, stderr %q", status, stderr)
			}
			if _, err := os.Lstat(out); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("the failed record left %s: %v", out, err)
			}

			os.WriteFile(out, []byte("old"), 0o640)
			defer os.Remove(out)
			_, stderr, status = nsprof(t, nil, force(args)...)
			if b, _ := os.ReadFile(out); status != 1 || string(b) != "old" {
				t.Errorf("with -f over a file: status %d, stderr %q; the file holds %q, want it unchanged", status, stderr, b)
			}
		})
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("left in %s: %v", dir, ents)
	}
}

// TestRecordUnprivileged records as a real unprivileged user (nobody,
// through setpriv): at kernel.perf_event_paranoid=2 its own command is
// sampled in user space only, as perf record does, and says so; another
// user's pid is refused for what it is (ptrace access), at paranoid 2 and
// at -1, leaving no file. The sysctl is restored at once.
func TestRecordUnprivileged(t *testing.T) {
	testutils.RequireRoot(t, "running as another user and setting kernel.perf_event_paranoid need root")
	setpriv := testutils.LookPathOrSkip(t, "setpriv")
	nobody, err := user.Lookup("nobody")
	if err != nil {
		testutils.RequireCI(t, "no user nobody: %v", err)
	}
	// A directory nobody can enter, with a copy of this test binary
	// (go test keeps its own in a directory only root can read).
	dir, err := os.MkdirTemp("", "nsprof-unprivileged-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	bin := filepath.Join(dir, "nsprof")
	copyExecutable(t, os.Args[0], bin)
	outDir := filepath.Join(dir, "out")
	if err := os.Mkdir(outDir, 0o777); err != nil {
		t.Fatal(err)
	}
	os.Chmod(dir, 0o755)
	os.Chmod(outDir, 0o777)
	asNobody := func(args ...string) (string, int) {
		t.Helper()
		cmd := exec.Command(setpriv, append([]string{"--reuid=" + nobody.Uid, "--regid=" + nobody.Gid, "--clear-groups", bin}, args...)...)
		cmd.Env = append(os.Environ(), "NSPROF_AS_MAIN=1")
		cmd.Dir = outDir
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		code := exitCodeOf(cmd.Run())
		return stderr.String(), code
	}

	const sysctl = "/proc/sys/kernel/perf_event_paranoid"
	saved, err := os.ReadFile(sysctl)
	if err != nil {
		t.Fatal(err)
	}
	restore := func() {
		if err := os.WriteFile(sysctl, saved, 0o644); err != nil {
			t.Errorf("restoring %s to %s: %v", sysctl, bytes.TrimSpace(saved), err)
		}
	}
	t.Cleanup(restore)
	setParanoid := func(v string) {
		t.Helper()
		if err := os.WriteFile(sysctl, []byte(v), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	own := filepath.Join(outDir, "own.syscap")
	other2 := filepath.Join(outDir, "other2.syscap")
	other1 := filepath.Join(outDir, "other1.syscap")
	setParanoid("2")
	ownLog, ownStatus := asNobody("record", "--no-cpu", "--no-memory", "--no-disk", "--no-network", "-o", own, "--",
		"sh", "-c", "i=0; while [ $i -lt 100000 ]; do i=$((i+1)); done")
	otherLog2, otherStatus2 := asNobody("record", "-o", other2, "-p", "1", "--duration", "1")
	setParanoid("-1")
	otherLog1, otherStatus1 := asNobody("record", "-o", other1, "-p", "1", "--duration", "1")
	restore()

	if ownStatus != 0 || !strings.Contains(ownLog, "kernel.perf_event_paranoid=2: sampling user space only") {
		t.Errorf("own command at paranoid 2: exit %d, stderr:\n%s", ownStatus, ownLog)
	} else {
		checkUserOnly(t, own, ownLog)
	}
	for level, r := range map[string]struct {
		log    string
		status int
	}{"2": {otherLog2, otherStatus2}, "-1": {otherLog1, otherStatus1}} {
		if r.status != 1 || !strings.Contains(r.log, "pid 1 runs as user 0, nsprof as "+nobody.Uid) ||
			strings.Contains(r.log, "needs root or CAP_PERFMON") || !strings.Contains(r.log, "not written") {
			t.Errorf("another user's pid at paranoid %s: exit %d, stderr:\n%s", level, r.status, r.log)
		}
	}
	for _, p := range []string{other2, other1} {
		if _, err := os.Lstat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("the refused record left %s: %v", p, err)
		}
	}
}

// checkUserOnly checks that the capture at path has samples and that none
// has kernel frames, and that log says once that they are left out.
func checkUserOnly(t *testing.T, path, log string) {
	t.Helper()
	if n := strings.Count(log, "user space only"); n != 1 {
		t.Errorf("said %d times that kernel frames are left out:\n%s", n, log)
	}
	samples := 0
	for _, f := range readClean(t, path) {
		if s, ok := f.(*capture.Sample); ok {
			samples++
			// A kernel frame is an address after a kernel context
			// marker; a marker with none after it (seen once in a
			// loaded CI run) names no kernel code.
			inKernel := false
			for _, a := range s.Addrs {
				if capture.IsContext(a) {
					inKernel = a == capture.ContextKernel
				} else if inKernel {
					t.Fatalf("a sample has kernel frames: %x", s.Addrs)
				}
			}
		}
	}
	if samples == 0 {
		t.Errorf("no samples of the own command; stderr:\n%s", log)
	}
}

func copyExecutable(t *testing.T, src, dst string) {
	t.Helper()
	in, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}
