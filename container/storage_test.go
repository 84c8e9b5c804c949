package container

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestLookupStorageFIFO: a FIFO where a user's container storage keeps
// containers.json (every user's graphroot is looked in) is passed over
// without waiting for a writer.
func TestLookupStorageFIFO(t *testing.T) {
	gr := t.TempDir()
	dir := filepath.Join(gr, "overlay-containers")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"containers.json", "volatile-containers.json"} {
		if err := syscall.Mkfifo(filepath.Join(dir, f), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	done := make(chan error, 1)
	go func() {
		_, err := lookupStorage(gr, "overlay", "0123456789ab", "")
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, os.ErrNotExist) {
			t.Errorf("lookupStorage: %v, want not found", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("lookupStorage still waits on the FIFO after 10 s")
	}
}
