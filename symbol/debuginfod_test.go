package symbol

import (
	"context"
	"encoding/hex"
	"errors"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"nsprof/internal/testutils"
)

func TestDebuginfod(t *testing.T) {
	dir := t.TempDir()
	served := t.TempDir()
	lib, stripped, debug := strippedWithDebug(t, dir, false)
	copyFile(t, debug, filepath.Join(served, "libfixture.debug"))
	obj := openFile(t, stripped)
	url, stop := testutils.StartDebuginfod(t, served, obj.BuildID())

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
	url, _ := testutils.StartDebuginfod(t, served, obj.BuildID())
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
