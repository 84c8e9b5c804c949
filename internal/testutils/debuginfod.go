package testutils

import (
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// StartDebuginfod runs elfutils' debuginfod over dir and waits until it
// serves the debug file of buildID. It returns the server URL and a
// function that stops it.
func StartDebuginfod(t *testing.T, dir string, buildID []byte) (url string, stop func()) {
	t.Helper()
	bin := LookPathOrSkip(t, "debuginfod")
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	db := filepath.Join(t.TempDir(), "debuginfod.sqlite")
	var logs SyncBuffer
	cmd := exec.Command(bin, "-v", "-p", fmt.Sprint(port), "-F", dir, "-d", db, "-t", "1", "-g", "0")
	cmd.Stdout, cmd.Stderr = &logs, &logs
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	stopped := false
	stop = func() {
		if !stopped {
			stopped = true
			cmd.Process.Kill()
			cmd.Wait()
		}
	}
	t.Cleanup(stop)
	url = fmt.Sprintf("http://127.0.0.1:%d", port)
	if err := waitServed(url, buildID); err != nil {
		t.Fatalf("%v\n%s", err, logs.String())
	}
	return url, stop
}

// WaitDebuginfod waits until the debuginfod server at url serves the
// debug file of buildID: it scans its directories in an order of its
// own, and serving one file says nothing of the others.
func WaitDebuginfod(t *testing.T, url string, buildID []byte) {
	t.Helper()
	if err := waitServed(url, buildID); err != nil {
		t.Fatal(err)
	}
}

// waitServed polls url for the debug file of buildID for up to 60 s.
func waitServed(url string, buildID []byte) error {
	probe := url + "/buildid/" + hex.EncodeToString(buildID) + "/debuginfo"
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := http.Get(probe) // debuginfod answers HEAD with 400
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("debuginfod did not serve %s within 60s (last: %v)", probe, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// SyncBuffer collects what a child process or a goroutine writes while
// the test may read it: safe for concurrent use.
type SyncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

// Write appends p.
func (b *SyncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

// String returns what was written so far.
func (b *SyncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
