package record

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"nsprof/internal/testutils"
	"nsprof/proc"
	"nsprof/symbol"
	"nsprof/symcache"
)

// TestKallsymsCached checks that a recording reads the kallsyms of its
// boot from the symbol cache when a recording of the same boot, kernel
// and modules kept it, that an address outside the kernel image's text
// and the modules has /proc/kallsyms read again, and that another boot or
// another module set does not take the cached text.
func TestKallsymsCached(t *testing.T) {
	root, sys := t.TempDir(), t.TempDir()
	write := func(dir, name, text string) {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	kallsyms := func(prefix string) string {
		return "ffffffff81000000 T _stext\n" +
			"ffffffff81000100 T " + prefix + "schedule\n" +
			"ffffffff81000200 T _etext\n" +
			"ffffffffc0001000 t " + prefix + "mod_fn\t[mod]\n" +
			"ffffffffc0100000 t " + prefix + "bpf_prog_1\t[bpf]\n"
	}
	write(root, "kallsyms", kallsyms("old_"))
	write(root, "sys/kernel/random/boot_id", "boot-1\n")
	write(root, "modules", "mod 4096 0 - Live 0xffffffffc0001000\n")
	write(sys, "kernel/notes", "notes")
	cache, err := symcache.Open(filepath.Join(t.TempDir(), "symbols"), symcache.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer cache.Close()
	name := func(addr uint64) string {
		t.Helper()
		r := &recorder{opts: &Options{Log: io.Discard, FS: proc.FS{Root: root}, SysRoot: sys}, sym: newSymbolizer()}
		r.sym.cache = cache
		k, err := r.kernelTable()
		if err != nil {
			t.Fatal(err)
		}
		s, _ := lookupOne(k, addr)
		return s.Name
	}
	const image, module, bpf = 0xffffffff81000150, 0xffffffffc0001010, 0xffffffffc0100010
	if got := name(image); got != "old_schedule" {
		t.Fatalf("first recording names %q", got)
	}
	// /proc/kallsyms changes under the same boot, kernel and modules
	// (which it does not): the cached text is read.
	write(root, "kallsyms", kallsyms("new_"))
	for _, a := range []uint64{image, module} {
		if got := name(a); !strings.HasPrefix(got, "old_") {
			t.Errorf("%#x named %q by a second recording: want the cached text's name", a, got)
		}
	}
	// Code outside the image and the modules (a BPF program) has the
	// text read again, and the cache keeps it.
	if got := name(bpf); got != "new_bpf_prog_1 [bpf]" {
		t.Errorf("BPF address named %q, want /proc/kallsyms's", got)
	}
	if got := name(image); got != "new_schedule" {
		t.Errorf("after the BPF address, the cache names %q, want the text read again", got)
	}
	for i, change := range []func(){
		func() { write(root, "sys/kernel/random/boot_id", "boot-2\n") },
		func() { write(root, "modules", "mod 8192 0 - Live 0xffffffffc0001000\n") },
		func() { write(sys, "kernel/notes", "other kernel") },
	} {
		prefix := fmt.Sprintf("v%d_", i)
		write(root, "kallsyms", kallsyms(prefix))
		change()
		if got := name(image); got != prefix+"schedule" {
			t.Errorf("change %d: named %q, want /proc/kallsyms's %q", i, got, prefix+"schedule")
		}
	}
}

// TestKallsymsCachedKeptWhenReadFails checks that a cached text stays in
// use when /proc/kallsyms, read again for an address outside what the
// cached text names for sure, cannot be indexed.
func TestKallsymsCachedKeptWhenReadFails(t *testing.T) {
	root, sys := t.TempDir(), t.TempDir()
	for name, text := range map[string]string{
		root + "/kallsyms":                  "ffffffff81000000 T _stext\nffffffff81000100 T schedule\nffffffff81000200 T _etext\n",
		root + "/sys/kernel/random/boot_id": "boot\n",
		sys + "/kernel/notes":               "notes",
	} {
		os.MkdirAll(filepath.Dir(name), 0o755)
		if err := os.WriteFile(name, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cache, err := symcache.Open(filepath.Join(t.TempDir(), "symbols"), symcache.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer cache.Close()
	table := func() kernelTable {
		r := &recorder{opts: &Options{Log: io.Discard, FS: proc.FS{Root: root}, SysRoot: sys}, sym: newSymbolizer()}
		r.sym.cache = cache
		k, err := r.kernelTable()
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	table() // fills the cache
	if err := os.WriteFile(root+"/kallsyms", []byte("0000000000000000 T _stext\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	k := table()
	lookupOne(k, 0xffffffffc0000000) // outside: read again, restricted now
	if s, ok := lookupOne(k, 0xffffffff81000150); !ok || s.Name != "schedule" {
		t.Errorf("after a failed read, %+v (%v), want the cached text's schedule", s, ok)
	}
}

// TestKallsymsCachedMapped: a recording takes this boot's kallsyms back
// from the symbol cache mapped, not read into its heap, names addresses
// from it as from /proc/kallsyms, and lets the mapping go with close.
func TestKallsymsCachedMapped(t *testing.T) {
	recording, root, _, _ := largeKallsymsRecordings(t)
	const addr, want = uint64(0xffffffff81001000 + 500*0x40 + 8), "kernel_function_number_500"
	first := recording()
	if k, err := first.kernelTable(); err != nil {
		t.Fatal(err)
	} else if s, _ := lookupOne(k, addr); s.Name != want || first.kern.mapped != nil {
		t.Fatalf("first recording: %#x named %q (mapped %v), want %q from /proc/kallsyms", addr, s.Name, first.kern.mapped != nil, want)
	}
	second := recording()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	k, err := second.kernelTable()
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	if second.kern.mapped == nil {
		t.Fatal("the second recording's kallsyms is not the cache's mapped text")
	}
	if size := textSize(t, root); after.TotalAlloc-before.TotalAlloc > uint64(size/16) {
		t.Errorf("taking the cached kallsyms back allocated %d bytes for a text of %d: want it mapped", after.TotalAlloc-before.TotalAlloc, size)
	}
	if s, _ := lookupOne(k, addr); s.Name != want {
		t.Errorf("%#x named %q from the cache, want %q", addr, s.Name, want)
	}
	second.kern.close()
	if second.kern.text != nil || second.kern.k != nil || second.kern.mapped != nil {
		t.Error("close left the mapped text in use")
	}
}

// TestKallsymsCachedCheckNotResident: checking the index of a cached
// kallsyms, which reads all of it and every name, lets the pages it
// touched go as it goes: the mapped blob is never resident all at once
// (6.8 MB for a moment raised a busy recording's peak RSS).
func TestKallsymsCachedCheckNotResident(t *testing.T) {
	second := secondOfCachedKallsyms(t)
	peak := watchMappedResidency(t)
	if _, err := second.kernelTable(); err != nil {
		t.Fatal(err)
	}
	defer second.kern.close()
	if second.kern.mapped == nil {
		t.Fatal("the second recording's kallsyms is not the cache's mapped text")
	}
	b := second.kern.mapped.Bytes()
	if most, evicts := peak(b); most > len(b)/4 || evicts < 2 {
		t.Errorf("taking the cached kallsyms back had up to %d bytes of the %d-byte blob resident, let go %d times", most, len(b), evicts)
	}
}

// TestKallsymsCachedLookupsNotResident: naming the kernel addresses of a
// bundle and embedding their excerpt from a cached kallsyms let the pages
// of its mapping go as they go: scattered lookups, each a binary search
// and a name, left the whole blob resident (the kernel maps 64 kB around
// each page touched).
func TestKallsymsCachedLookupsNotResident(t *testing.T) {
	second := secondOfCachedKallsyms(t)
	k, err := second.kernelTable()
	if err != nil {
		t.Fatal(err)
	}
	defer second.kern.close()
	if second.kern.mapped == nil {
		t.Fatal("the second recording's kallsyms is not the cache's mapped text")
	}
	// 400 addresses spread over the 100 000 symbols, as a busy
	// recording samples a few hundred kernel functions.
	var addrs []uint64
	for i := range 400 {
		addrs = append(addrs, 0xffffffff81001000+uint64(i*250+i%7)*0x40+8)
	}
	peak := watchMappedResidency(t)
	syms, found := k.LookupSorted(addrs)
	if ex := second.kallsymsText(true); !bytes.Contains(ex, []byte(" kernel_function_number_251\n")) {
		t.Errorf("the excerpt (%d bytes) lacks a symbol named", len(ex))
	}
	b := second.kern.mapped.Bytes()
	if most, evicts := peak(b); most > len(b)/4 || evicts < 2 {
		t.Errorf("naming %d kernel addresses and their excerpt had up to %d bytes of the %d-byte blob resident, let go %d times", len(addrs), most, len(b), evicts)
	}
	for i, a := range addrs {
		if want := fmt.Sprintf("kernel_function_number_%d", i*250+i%7); !found[i] || syms[i].Name != want {
			t.Fatalf("%#x named %q (%v), want %q", a, syms[i].Name, found[i], want)
		}
	}
}

// watchMappedResidency has each letting go of a mapped kallsyms blob's
// pages see first how much of it is resident (mapped in this process,
// testutils.ResidentBytes), until the test ends. The function returned
// gives the most seen, b's residency now included, and how many times
// the pages were let go. Between two lettings go residency only grows,
// so this is the blob's peak, which the process's peak RSS is not (see
// testutils.ResidentBytes).
func watchMappedResidency(t *testing.T) func(b []byte) (most, evicts int) {
	t.Helper()
	saved := evictMapped
	t.Cleanup(func() { evictMapped = saved })
	most, evicts := 0, 0
	evictMapped = func(m *symcache.Mapped) {
		most, evicts = max(most, testutils.ResidentBytes(t, m.Bytes())), evicts+1
		saved(m)
	}
	return func(b []byte) (int, int) { return max(most, testutils.ResidentBytes(t, b)), evicts }
}

// secondOfCachedKallsyms returns the second of two recorders of
// largeKallsyms's system sharing a symbol cache, the first having kept
// the kallsyms in it, written again a page at a time (rewriteByPages).
func secondOfCachedKallsyms(t *testing.T) *recorder {
	t.Helper()
	recording, _, dir, cache := largeKallsymsRecordings(t)
	first := recording()
	if _, err := first.kernelTable(); err != nil {
		t.Fatal(err)
	}
	testutils.RewriteByPages(t, filepath.Join(dir, first.kernelCache(cache).key))
	return recording()
}

// lookupOne names one kernel address through k.
func lookupOne(k kernelTable, addr uint64) (symbol.Symbol, bool) {
	syms, found := k.LookupSorted([]uint64{addr})
	return syms[0], found[0]
}

// largeKallsyms writes a /proc of 100 000 kernel text symbols (about 4.8
// MB of kallsyms), a boot id and kernel notes under new directories, and
// returns the /proc root and the /sys root.
func largeKallsyms(t *testing.T) (root, sys string) {
	t.Helper()
	root, sys = t.TempDir(), t.TempDir()
	var text strings.Builder
	text.WriteString("ffffffff81000000 T _stext\n")
	for i := range 100_000 {
		fmt.Fprintf(&text, "%x T kernel_function_number_%d\n", 0xffffffff81001000+uint64(i)*0x40, i)
	}
	text.WriteString("ffffffff82000000 T _etext\n")
	for name, data := range map[string]string{
		root + "/kallsyms":                  text.String(),
		root + "/sys/kernel/random/boot_id": "boot\n",
		sys + "/kernel/notes":               "notes",
	} {
		os.MkdirAll(filepath.Dir(name), 0o755)
		if err := os.WriteFile(name, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return root, sys
}

// textSize returns the size of the kallsyms under root.
func textSize(t *testing.T, root string) int64 {
	t.Helper()
	fi, err := os.Stat(root + "/kallsyms")
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

// largeKallsymsRecordings returns a maker of recorders of largeKallsyms's
// system sharing one symbol cache (closed when the test ends), the /proc
// root, and the cache's directory and the cache.
func largeKallsymsRecordings(t *testing.T) (recording func() *recorder, root, dir string, cache *symcache.Cache) {
	t.Helper()
	root, sys := largeKallsyms(t)
	dir = filepath.Join(t.TempDir(), "symbols")
	cache, err := symcache.Open(dir, symcache.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cache.Close() })
	recording = func() *recorder {
		r := &recorder{opts: &Options{Log: io.Discard, FS: proc.FS{Root: root}, SysRoot: sys}, sym: newSymbolizer()}
		r.sym.cache = cache
		return r
	}
	return recording, root, dir, cache
}
