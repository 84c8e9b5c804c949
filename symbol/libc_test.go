package symbol

import (
	"os"
	"strings"
	"testing"

	"nsprof/internal/testutils"
)

const hostLibc = "/lib/x86_64-linux-gnu/libc.so.6"

// openHostLibc opens the host's libc and checks that its debug file (from
// libc6-dbg) is installed.
func openHostLibc(tb testing.TB) *File {
	tb.Helper()
	f, err := Open(hostLibc)
	if err != nil {
		testutils.RequireCI(tb, "%s: %v", hostLibc, err)
	}
	tb.Cleanup(func() { f.Close() })
	if _, err := os.Stat(buildIDPath(DefaultDebugDir, f.BuildID())); err != nil {
		testutils.RequireCI(tb, "libc debug file missing (apt-get install libc6-dbg): %v", err)
	}
	return f
}

// TestLoadHostLibc loads the host libc: its .symtab is in libc6-dbg's
// build-id file, and a local function (not in .dynsym) must be named.
func TestLoadHostLibc(t *testing.T) {
	f := openHostLibc(t)
	var l Loader
	s, err := l.Load(f, hostLibc)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(s.Source(), "build-id:/usr/lib/debug/.build-id/") {
		t.Errorf("Source = %q", s.Source())
	}
	dyn, err := f.Symbols()
	if err != nil {
		t.Fatal(err)
	}
	if s.Table().Len() <= dyn.Len() {
		t.Errorf("%d symbols with the debug file, %d without", s.Table().Len(), dyn.Len())
	}
	// Every exported function keeps a name at its address.
	for _, d := range dyn.All() {
		if _, ok := s.Lookup(d.Addr); !ok {
			t.Errorf("exported %s at %#x not found", d.Name, d.Addr)
			break
		}
	}
	var local bool
	for _, sym := range s.Table().All() {
		if sym.Name == "_IO_new_file_overflow" || sym.Name == "__libc_start_call_main" {
			local = true
		}
	}
	if !local {
		t.Error("no libc-internal function found through the debug file")
	}
}

// BenchmarkLoadLibc measures the symbolization setup per DSO: opening the
// host libc, finding its debug file and building the table.
func BenchmarkLoadLibc(b *testing.B) {
	openHostLibc(b)
	var l Loader
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		f, err := Open(hostLibc)
		if err != nil {
			b.Fatal(err)
		}
		s, err := l.Load(f, hostLibc)
		if err != nil {
			b.Fatal(err)
		}
		n = s.Table().Len()
		f.Close()
	}
	b.ReportMetric(float64(n), "symbols")
}

// BenchmarkLookup measures one address lookup in libc's table.
func BenchmarkLookup(b *testing.B) {
	f := openHostLibc(b)
	var l Loader
	s, err := l.Load(f, hostLibc)
	if err != nil {
		b.Fatal(err)
	}
	syms := s.Table().All()
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		s.Lookup(syms[i%len(syms)].Addr + 3)
		i += 7919
	}
}
