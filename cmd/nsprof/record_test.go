package main

import (
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"nsprof/capture"
	"nsprof/internal/testutils"
)

// TestMain lets the test binary run as nsprof itself (NSPROF_AS_MAIN=1),
// so tests can send real signals to a recording process.
func TestMain(m *testing.M) {
	if os.Getenv("NSPROF_AS_MAIN") == "1" {
		if os.Getenv(peakEnv) == "1" {
			mainPeak()
		}
		main()
		return
	}
	os.Exit(m.Run())
}

// nsprofProcess returns a command running nsprof with args in a separate
// process.
func nsprofProcess(t *testing.T, args ...string) (*exec.Cmd, *bytes.Buffer) {
	t.Helper()
	testutils.RequireRoot(t, "recording tests need root")
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), "NSPROF_AS_MAIN=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	return cmd, &stderr
}

func exitCodeOf(err error) int {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	if err != nil {
		return -1
	}
	return 0
}

// spin keeps one CPU busy in this process until the returned function is
// called (which may be called more than once), so that a system-wide
// recording gets a steady stream of samples.
func spin() (stop func()) {
	done := make(chan struct{})
	var once sync.Once
	go func() {
		for n := 0; ; n++ {
			if n%(1<<16) == 0 {
				select {
				case <-done:
					return
				default:
				}
			}
		}
	}()
	return func() { once.Do(func() { close(done) }) }
}

// fillDisk writes path until its file system has no room left.
func fillDisk(t *testing.T, path string) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	block := make([]byte, 1<<20)
	for {
		if _, err := f.Write(block); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatal(err)
			}
			return
		}
	}
}

// readClean reads a capture to its end and fails on any damage; it returns
// the frames.
func readClean(t *testing.T, path string) []capture.Frame {
	t.Helper()
	r, err := capture.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var frames []capture.Frame
	for {
		f, err := r.Next()
		if err == io.EOF {
			return frames
		}
		if err != nil {
			t.Fatalf("capture %s damaged after %d frames: %v", path, len(frames), err)
		}
		frames = append(frames, f)
	}
}

func TestRecordExitStatusEnvAndOverwrite(t *testing.T) {
	out := filepath.Join(t.TempDir(), "c.syscap")
	args := []string{"record", "--no-cpu", "--no-disk", "--no-network", "-o", out, "-e", "NSPROF_T=42", "--",
		"sh", "-c", `test "$NSPROF_T" = 42 && test "${#SECRET_TOKEN}" = 7 && exit 7`}
	cmd, stderr := nsprofProcess(t, args...)
	cmd.Env = append(cmd.Env, "SECRET_TOKEN=hunter2")
	if code := exitCodeOf(cmd.Run()); code != 7 {
		t.Fatalf("exit %d, want the command's 7; stderr:\n%s", code, stderr)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(data, []byte("hunter2")) || bytes.Contains(data, []byte("NSPROF_T=42")) {
		t.Error("the capture stores the environment")
	}
	names := ""
	for _, f := range readClean(t, out) {
		if m, ok := f.(*capture.Metadata); ok && m.ID == "nsprof.env-names" {
			names = m.Value
		}
	}
	if names != "NSPROF_T" {
		t.Errorf("nsprof.env-names = %q", names)
	}

	cmd, stderr = nsprofProcess(t, args...)
	if code := exitCodeOf(cmd.Run()); code != 1 || !strings.Contains(stderr.String(), "file exists (use -f") {
		t.Errorf("second run without -f: exit %d, stderr %q", code, stderr)
	}
}

// TestRecordStopsOnSignal sends SIGINT and SIGTERM to a recording nsprof
// (not to its command): each ends the recording with a complete capture.
func TestRecordStopsOnSignal(t *testing.T) {
	busy := testutils.BuildFixture(t, "callchain")
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "c.syscap")
			cmd, stderr := nsprofProcess(t, "record", "--no-cpu", "--no-disk", "--no-network", "-o", out, "--", busy, "60", "0", "nofork")
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			time.Sleep(1500 * time.Millisecond)
			cmd.Process.Signal(sig)
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			select {
			case err := <-done:
				if code := exitCodeOf(err); code != 128+int(syscall.SIGTERM) {
					t.Errorf("exit %d, want 143 (the command ended by SIGTERM); stderr:\n%s", code, stderr)
				}
			case <-time.After(15 * time.Second):
				cmd.Process.Kill()
				t.Fatalf("nsprof did not stop within 15s of %v; stderr:\n%s", sig, stderr)
			}
			if !strings.Contains(stderr.String(), "stopped by signal") {
				t.Errorf("no message about the signal:\n%s", stderr)
			}
			samples := 0
			for _, f := range readClean(t, out) {
				if _, ok := f.(*capture.Sample); ok {
					samples++
				}
			}
			if samples < 500 {
				t.Errorf("%d samples in 1.5s of a busy command", samples)
			}
		})
	}
}

func TestRecordCommandCrash(t *testing.T) {
	out := filepath.Join(t.TempDir(), "c.syscap")
	cmd, stderr := nsprofProcess(t, "record", "--no-cpu", "--no-disk", "--no-network", "-o", out, "--", "sh", "-c", "kill -SEGV $$")
	if code := exitCodeOf(cmd.Run()); code != 128+int(syscall.SIGSEGV) {
		t.Errorf("exit %d, want 139", code)
	}
	if !strings.Contains(stderr.String(), "SIGSEGV") {
		t.Errorf("stderr does not name the signal:\n%s", stderr)
	}
	readClean(t, out)
}

// TestRecordDiskFull records the whole system into a tmpfs that fills
// once the recording has begun: nsprof stops with a clear error and a
// non-zero status, and the capture reads cleanly up to its last flushed
// frame, with Sysprof's reader too.
//
// The tmpfs had 256 KiB and the samples filled it, the start of a
// recording (process table, mount tables) taking most of it; with a few
// hundred processes more (the e2e tests running beside, in CI) the start
// alone filled it, and a recording that never began leaves no file. So
// the tmpfs is roomy, and the test fills it itself 2 s in, while one CPU
// is kept busy at 4 kHz: the writer has reserved a mebibyte or more
// ahead of its writes (see capture.Writer), which the samples fill first
// (at 1 kHz that took 13-17 s).
func TestRecordDiskFull(t *testing.T) {
	testutils.RequireRoot(t, "mounting a tmpfs needs root")
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=64m", "tmpfs", dir).CombinedOutput(); err != nil {
		testutils.RequireCI(t, "mount tmpfs: %v %s", err, out)
	}
	defer exec.Command("umount", dir).Run()
	out := filepath.Join(dir, "c.syscap")
	cmd, stderr := nsprofProcess(t, "record", "-a", "-F", "4000", "--duration", "20", "-o", out)
	stopSpin := spin()
	defer stopSpin()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// 2 s in, and once something was flushed: the recording has begun.
	time.Sleep(2 * time.Second)
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if fi, err := os.Stat(out); err == nil && fi.Size() > 0 {
			break
		}
	}
	filled := time.Now()
	fillDisk(t, filepath.Join(dir, "filler"))
	code := exitCodeOf(cmd.Wait())
	stopSpin()
	if code == 0 {
		t.Fatalf("exit 0 on a full disk; stderr:\n%s", stderr)
	}
	if time.Since(filled) > 10*time.Second {
		t.Errorf("took %v to notice the full disk", time.Since(filled))
	}
	if !strings.Contains(stderr.String(), "no space left on device") {
		t.Errorf("stderr does not say why:\n%s", stderr)
	}
	frames := readClean(t, out)
	if len(frames) == 0 {
		t.Fatal("nothing readable in the capture")
	}
	_, end := testutils.SysprofReadAll(t, out)
	if !strings.HasSuffix(end, "ok=1") {
		t.Errorf("libsysprof-capture: %s", end)
	}
}
