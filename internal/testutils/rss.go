package testutils

import (
	"encoding/binary"
	"os"
	"slices"
	"testing"
	"unsafe"
)

// ResidentBytes returns how many bytes of b's pages are mapped in the
// test process (present in its page table, from /proc/self/pagemap),
// whether or not the page cache holds the others: what b adds to the
// process's RSS. The RSS itself moves with the rest of the process: in
// CI, a test's peak RSS grew by 2 MB (2,088,960 bytes) where the blob it
// watched kept some 0.4 MB resident, and here 2 MB came even with the
// anonymous memory's growth taken out, as a 2 MB folio of another mapped
// file (the test binary's?) would.
func ResidentBytes(t testing.TB, b []byte) int {
	t.Helper()
	if len(b) == 0 {
		return 0
	}
	page := uintptr(os.Getpagesize())
	lo := uintptr(unsafe.Pointer(unsafe.SliceData(b))) / page
	hi := (uintptr(unsafe.Pointer(unsafe.SliceData(b))) + uintptr(len(b)) + page - 1) / page
	f, err := os.Open("/proc/self/pagemap")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	entries := make([]byte, 8*(hi-lo))
	if _, err := f.ReadAt(entries, int64(lo*8)); err != nil {
		t.Fatalf("reading /proc/self/pagemap: %v", err)
	}
	n := 0
	for e := range slices.Chunk(entries, 8) {
		if binary.LittleEndian.Uint64(e)&(1<<63) != 0 { // present
			n++
		}
	}
	return n * int(page)
}

// RewriteByPages writes the file at path again a page at a time, as a
// file read back from the disk would be in the page cache: a file just
// written whole can be held in folios of up to 2 MB, which a fault maps
// whole (Linux 6.18), whatever is let go between.
func RewriteByPages(t testing.TB, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	os.Remove(path)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	for p := range slices.Chunk(b, 4096) {
		if _, err := f.Write(p); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}
