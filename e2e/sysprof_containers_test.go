//go:build linux

package e2e

import (
	"bufio"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"nsprof/analyze"
	"nsprof/internal/testutils"
	"nsprof/internal/testutils/containers"
)

// systemBus makes sure a D-Bus system bus runs, through which sysprof-cli
// reaches sysprofd: one is started (and stopped at cleanup) when none
// answers, as on a machine without systemd.
func systemBus(t *testing.T) {
	t.Helper()
	if exec.Command("dbus-send", "--system", "--dest=org.freedesktop.DBus", "--type=method_call", "--print-reply",
		"/", "org.freedesktop.DBus.GetId").Run() == nil {
		return
	}
	bin := testutils.LookPathOrSkip(t, "dbus-daemon")
	if err := os.MkdirAll("/run/dbus", 0o755); err != nil {
		t.Fatal(err)
	}
	os.Remove("/run/dbus/pid")
	out, err := exec.Command(bin, "--system", "--fork", "--print-pid").Output()
	if err != nil {
		testutils.RequireCI(t, "no system bus, and dbus-daemon --system fails: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil {
		t.Fatalf("dbus-daemon --print-pid: %q", out)
	}
	t.Cleanup(func() { syscall.Kill(pid, syscall.SIGTERM) })
}

// sysprofRecord records the whole system with Sysprof's own sysprof-cli
// for secs seconds (counted from its "Recording" line) and returns the
// capture's path. sysprof-cli stops at SIGINT, as at a user's Ctrl-C.
func sysprofRecord(t *testing.T, secs time.Duration) string {
	t.Helper()
	bin := testutils.LookPathOrSkip(t, "sysprof-cli")
	systemBus(t)
	out := filepath.Join(t.TempDir(), "sysprof.syscap")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--force", "--no-battery", "--no-cpu", "--no-disk", "--no-memory", "--no-network", out)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout = cmd.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var log strings.Builder
	recording := make(chan bool, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(stderr)
		ok := false
		for sc.Scan() {
			log.WriteString(sc.Text() + "\n")
			if !ok && strings.HasPrefix(sc.Text(), "Recording") {
				ok = true
				recording <- true
			}
		}
		if !ok {
			recording <- false
		}
		io.Copy(io.Discard, stderr)
	}()
	select {
	case ok := <-recording:
		if !ok {
			<-done
			cmd.Wait()
			t.Fatalf("sysprof-cli did not start recording:\n%s", log.String())
		}
	case <-time.After(time.Minute):
		cmd.Process.Kill()
		<-done
		cmd.Wait()
		t.Fatalf("sysprof-cli: no \"Recording\" line in a minute:\n%s", log.String())
	}
	time.Sleep(secs)
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	<-done
	if err := cmd.Wait(); err != nil {
		t.Fatalf("sysprof-cli: %v\n%s", err, log.String())
	}
	return out
}

// TestSysprofCLIPodman records a podman container running the fixture's
// CPU loop with sysprof-cli, whose capture has no nsprof process file,
// only each process's /proc/PID/mountinfo: the report groups the loop's
// samples under the container, found by its id from the mount table, and
// --container with an id prefix selects them.
func TestSysprofCLIPodman(t *testing.T) {
	testutils.LookPathOrSkip(t, "sysprof-cli")
	t.Run("rootful", func(t *testing.T) {
		pid, id := containers.StartPodman(t, "overlay")
		checkSysprofPodman(t, sysprofRecord(t, 2*time.Second), pid, id, false)
	})
	t.Run("rootless", func(t *testing.T) {
		pid, id := containers.StartPodmanRootless(t, "overlay")
		checkSysprofPodman(t, sysprofRecord(t, 2*time.Second), pid, id, true)
	})
}

// checkSysprofPodman checks the reports of a sysprof-cli capture of the
// podman container id, whose process pid runs the CPU loop.
func checkSysprofPodman(t *testing.T, capture string, pid int, id string, rootless bool) {
	t.Helper()

	byProcess := reportJSON(t, capture, "--by", "process")
	loop, own := -1, ""
	for _, g := range byProcess.Groups {
		if int(g.PID) == pid {
			loop, own = g.Samples, g.Container
			if !strings.HasPrefix(g.Container, "podman:") {
				t.Errorf("process %d: container %q, want podman", pid, g.Container)
			}
		}
	}
	if loop < 100 {
		t.Fatalf("process %d: %d samples in 2 s of its CPU loop, want >= 100", pid, loop)
	}

	byContainer := reportJSON(t, capture, "--by", "container")
	var podman []string
	for _, g := range byContainer.Groups {
		if !strings.HasPrefix(g.Key, "podman:") {
			continue
		}
		if g.Key != own && !strings.Contains(g.Key, id[:12]) && strings.HasPrefix(g.Key, "podman:nsprof-hot-") {
			// sysprof-cli records the whole system: another test
			// package's container (go test runs packages side by side)
			// is a group of its own, by its own name and id.
			t.Logf("group %s: another container, %d samples", g.Key, g.Samples)
			continue
		}
		podman = append(podman, g.Key)
		t.Logf("group %s: %d samples (the loop's: %d)", g.Key, g.Samples, loop)
		if g.Samples != loop {
			t.Errorf("group %s: %d samples, want the loop's %d", g.Key, g.Samples, loop)
		}
		// Named from conmon's command line, or by the id's prefix.
		if g.Key != "podman:"+id[:12] && !strings.HasPrefix(g.Key, "podman:nsprof-hot-") {
			t.Errorf("group %s: want podman:%s or the container's name", g.Key, id[:12])
		}
	}
	if len(podman) != 1 {
		keys := make([]string, 0, len(byContainer.Groups))
		for _, g := range byContainer.Groups {
			keys = append(keys, g.Key)
		}
		t.Errorf("--by container: podman groups %v of %v, want one", podman, keys)
	}

	selected := reportJSON(t, capture, "--by", "process", "--container", id[:12])
	if len(selected.Groups) != 1 || int(selected.Groups[0].PID) != pid || selected.Groups[0].Samples != loop {
		t.Errorf("--container %s: groups %+v, want only process %d with %d samples", id[:12], selected.Groups, pid, loop)
	}

	procs := nsprof(t, "report", "--processes", capture)
	for _, line := range strings.Split(procs, "\n") {
		if f := strings.Fields(line); len(f) > 0 && f[0] == strconv.Itoa(pid) && !strings.Contains(line, "podman:") {
			t.Errorf("--processes: process %d not in its container: %s", pid, line)
		}
	}

	p, err := analyze.LoadFile(capture, analyze.LoadOptions{NoSymbolize: true})
	if err != nil {
		t.Fatal(err)
	}
	var c *analyze.Container
	if pr := p.Process(int32(pid)); pr != nil {
		c = pr.Container
	}
	if c == nil || c.Kind != "podman" || c.ID != id || c.Rootless != rootless {
		t.Errorf("process %d: container %+v, want podman id %s, rootless %v", pid, c, id, rootless)
	}
}
