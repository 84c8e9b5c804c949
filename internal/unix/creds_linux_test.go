//go:build linux

package unix

import (
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"nsprof/internal/testutils"
)

// TestWithCreds checks that an open inside WithCreds is refused what the
// credentials may not read, that the same open outside succeeds, and that
// no thread goes back to other goroutines with the credentials: opens of
// many goroutines interleaved with WithCreds calls all succeed.
func TestWithCreds(t *testing.T) {
	if os.Geteuid() != 0 {
		testutils.RequireCI(t, "needs root to take other credentials (euid %d)", os.Geteuid())
	}
	// Not t.TempDir: its parent is 0700, which nobody cannot search.
	dir, err := os.MkdirTemp("", "nsprof-creds-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	secret := filepath.Join(dir, "secret")
	if err := os.WriteFile(secret, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	shared := filepath.Join(dir, "shared")
	if err := os.WriteFile(shared, []byte("x"), 0o640); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(shared, 0, 4242); err != nil {
		t.Fatal(err)
	}
	nobody := Creds{UID: 65534, GID: 65534}
	open := func(p string) error {
		f, err := os.Open(p)
		if err == nil {
			f.Close()
		}
		return err
	}
	public := filepath.Join(dir, "public")
	if err := os.WriteFile(public, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := WithCreds(nobody, func() error { return open(public) }); err != nil {
		t.Errorf("open of a 0644 file as nobody: %v", err)
	}
	if err := WithCreds(nobody, func() error { return open(secret) }); !errors.Is(err, os.ErrPermission) {
		t.Errorf("open of a 0600 root file as nobody: %v, want permission denied", err)
	}
	if err := WithCreds(nobody, func() error { return open(shared) }); !errors.Is(err, os.ErrPermission) {
		t.Errorf("open of a 0640 group-4242 file as nobody: %v, want permission denied", err)
	}
	member := Creds{UID: 65534, GID: 65534, Groups: []uint32{4242}}
	if err := WithCreds(member, func() error { return open(shared) }); err != nil {
		t.Errorf("open of a 0640 group-4242 file with group 4242: %v", err)
	}
	if err := open(secret); err != nil {
		t.Fatalf("open as root after WithCreds: %v", err)
	}

	var wg sync.WaitGroup
	errs := make(chan error, 400)
	for range 200 {
		wg.Add(2)
		go func() {
			defer wg.Done()
			WithCreds(nobody, func() error { return open(secret) })
		}()
		go func() {
			defer wg.Done()
			if err := open(secret); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("open as root while other goroutines held other credentials: %v", err)
	}
}

// BenchmarkWithCreds measures the cost WithCreds adds to one open: a
// locked thread that takes and gives back the credentials.
func BenchmarkWithCreds(b *testing.B) {
	if os.Geteuid() != 0 {
		b.Skip("needs root")
	}
	nobody := Creds{UID: 65534, GID: 65534}
	for b.Loop() {
		WithCreds(nobody, func() error { return nil })
	}
}
