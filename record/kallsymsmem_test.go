package record

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"nsprof/capture"
	"nsprof/proc"
)

// TestKallsymsKeptCompressed embeds a 4 MB kallsyms and checks that the
// recorder keeps less than a third of it in memory until the kernel
// frames are named (the text was held while the symbol bundle read the
// sampled files' DWARF, the recorder's peak), and that the names then
// come from what it embedded.
func TestKallsymsKeptCompressed(t *testing.T) {
	dir := t.TempDir()
	var text bytes.Buffer
	const base uint64 = 0xffffffff81000000
	for i := 0; text.Len() < 4<<20; i++ {
		fmt.Fprintf(&text, "%016x T kernel_function_%d\n", base+uint64(i)*16, i)
	}
	if err := os.WriteFile(filepath.Join(dir, "kallsyms"), text.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := os.Create(filepath.Join(dir, "x.syscap"))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	w, err := capture.NewWriter(out)
	if err != nil {
		t.Fatal(err)
	}
	r := &recorder{w: w, opts: &Options{Log: io.Discard, FS: proc.FS{Root: dir}}}

	before := liveHeap()
	r.embedKallsyms()
	after := liveHeap()
	kept := after - min(before, after)
	if kept > uint64(text.Len())/3 {
		t.Errorf("after embedding a %d-byte kallsyms the recorder holds %d bytes more, want under a third", text.Len(), kept)
	}
	if r.writeErr != nil {
		t.Fatal(r.writeErr)
	}

	k, err := r.kernelTable()
	if err != nil {
		t.Fatalf("kernel table: %v", err)
	}
	if sym, ok := k.Lookup(base + 5*16 + 3); !ok || sym.Name != "kernel_function_5" {
		t.Errorf("kernel address %#x named %q (%v), want kernel_function_5", base+5*16+3, sym.Name, ok)
	}
	runtime.KeepAlive(r)
}

// liveHeap returns the bytes of live heap after a collection.
func liveHeap() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}
