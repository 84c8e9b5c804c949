package symbol

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"nsprof/internal/testutils"
)

// startDebuginfod runs elfutils' debuginfod over dir and waits until it
// serves the debug file of buildID. It returns the server URL and a
// function that stops it.
func startDebuginfod(t *testing.T, dir string, buildID []byte) (url string, stop func()) {
	t.Helper()
	bin := testutils.LookPathOrSkip(t, "debuginfod")
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	db := filepath.Join(t.TempDir(), "debuginfod.sqlite")
	var logs syncBuffer
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
	probe := url + "/buildid/" + hex.EncodeToString(buildID) + "/debuginfo"
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := http.Get(probe) // debuginfod answers HEAD with 400
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return url, stop
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("debuginfod did not serve %s within 60s (last: %v)\n%s", probe, err, logs.String())
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func TestDebuginfod(t *testing.T) {
	dir := t.TempDir()
	served := t.TempDir()
	lib, stripped, debug := strippedWithDebug(t, dir, false)
	copyFile(t, debug, filepath.Join(served, "libfixture.debug"))
	obj := openFile(t, stripped)
	url, stop := startDebuginfod(t, served, obj.BuildID())

	cache := t.TempDir()
	l := &Loader{
		Roots:      []Opener{RootOpener(t.TempDir())}, // nothing local
		Debuginfod: &Debuginfod{URLs: []string{"http://127.0.0.1:1", url}, CacheDir: cache, Timeout: 30 * time.Second},
	}
	s, err := l.Load(obj, stripped)
	if err != nil {
		t.Fatal(err)
	}
	if s.Source() != "debuginfod" {
		t.Errorf("Source = %q, want debuginfod", s.Source())
	}
	wantNames(t, s, symAddrs(t, lib), all, nil)
	cached := filepath.Join(cache, hex.EncodeToString(obj.BuildID()), "debuginfo")
	if _, err := os.Stat(cached); err != nil {
		t.Errorf("not cached: %v", err)
	}
	if leftovers, _ := filepath.Glob(filepath.Join(cache, "*", ".debuginfo-*")); len(leftovers) > 0 {
		t.Errorf("temporary files left: %v", leftovers)
	}

	// With the server gone, the cache answers.
	stop()
	s, err = l.Load(obj, stripped)
	if err != nil {
		t.Fatal(err)
	}
	if s.Source() != "debuginfod" {
		t.Errorf("from the cache: Source = %q, want debuginfod", s.Source())
	}
	wantNames(t, s, symAddrs(t, lib), all, nil)

	// Without the cache and the server, only .dynsym is left.
	l.Debuginfod.CacheDir = t.TempDir()
	s, err = l.Load(obj, stripped)
	if err != nil {
		t.Fatal(err)
	}
	if s.Source() != "dynsym" {
		t.Errorf("no server, no cache: Source = %q, want dynsym", s.Source())
	}
}

func TestDebuginfodNotFound(t *testing.T) {
	dir := t.TempDir()
	_, stripped, debug := strippedWithDebug(t, dir, false)
	served := t.TempDir()
	copyFile(t, debug, filepath.Join(served, "libfixture.debug"))
	obj := openFile(t, stripped)
	url, _ := startDebuginfod(t, served, obj.BuildID())
	d := &Debuginfod{URLs: []string{url}, CacheDir: t.TempDir()}
	_, err := d.Fetch(context.Background(), []byte{0xde, 0xad, 0xbe, 0xef})
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Fetch of an unknown build-id: %v, want fs.ErrNotExist", err)
	}
}

// TestDebuginfodTimeout points the client at a server that accepts
// connections and never answers.
func TestDebuginfodTimeout(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	d := &Debuginfod{URLs: []string{"http://" + l.Addr().String()}, CacheDir: t.TempDir(), Timeout: 300 * time.Millisecond}
	start := time.Now()
	_, err = d.Fetch(context.Background(), []byte{1, 2, 3, 4})
	if took := time.Since(start); err == nil || took > 5*time.Second {
		t.Errorf("Fetch from a silent server: %v after %v; want an error after about 300ms", err, took)
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("err = %v, want context.DeadlineExceeded", err)
	}
}

func TestDebuginfodFromEnv(t *testing.T) {
	t.Setenv("DEBUGINFOD_URLS", "")
	if d := DebuginfodFromEnv(); d != nil {
		t.Errorf("empty DEBUGINFOD_URLS: %+v", d)
	}
	t.Setenv("DEBUGINFOD_URLS", "https://a.example  https://b.example/")
	t.Setenv("DEBUGINFOD_CACHE_PATH", "")
	t.Setenv("DEBUGINFOD_TIMEOUT", "")
	t.Setenv("XDG_CACHE_HOME", "/xdg")
	d := DebuginfodFromEnv()
	if d == nil || len(d.URLs) != 2 || d.URLs[1] != "https://b.example/" || d.Timeout != 90*time.Second || d.CacheDir != "/xdg/nsprof/debuginfod" {
		t.Errorf("DebuginfodFromEnv = %+v", d)
	}
	t.Setenv("DEBUGINFOD_CACHE_PATH", "/c")
	t.Setenv("DEBUGINFOD_TIMEOUT", "7")
	if d := DebuginfodFromEnv(); d.CacheDir != "/c" || d.Timeout != 7*time.Second {
		t.Errorf("DebuginfodFromEnv = %+v", d)
	}
}

// syncBuffer collects a child's output while the test may read it.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
