package record

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"nsprof/capture"
	"nsprof/internal/testutils"
)

// TestRecordDeletedBinary records a process whose executable was deleted
// after it started (as a package upgrade replaces a running daemon's
// binary): its mappings read "(deleted)" and no path reaches the file,
// which perf reports as bare addresses. The file is read through the
// process (map_files), its source lines too, and the symbol cache keeps
// them: a second recording of the same build, from the cache, names the
// lines as well.
func TestRecordDeletedBinary(t *testing.T) {
	requirePerf(t)
	data, err := os.ReadFile(testutils.BuildFixture(t, "callchain"))
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "upgraded")
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "10", "1", "nofork")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	time.Sleep(200 * time.Millisecond)
	if err := os.Remove(bin); err != nil {
		t.Fatal(err)
	}
	pid := int32(cmd.Process.Pid)
	opts := quiet
	opts.PIDs = []int{cmd.Process.Pid}
	opts.Duration = time.Second
	opts.SymbolCache = t.TempDir()
	waitFillers(t) // after the TempDir: its cleanup runs first
	for _, run := range []string{"first", "from the cache"} {
		path, _ := recordTo(t, context.Background(), opts)
		c := load(t, path)
		syms, lines := bundleOf(t, c)
		named, lined := 0, 0
		for _, s := range c.samples {
			if s.PID != pid || len(s.Addrs) < 2 {
				continue
			}
			leaf := s.Addrs[1] // after the user context mark
			if sym, ok := syms.Lookup(pid, leaf); !ok || sym.Name != "fixture_leaf" {
				continue
			}
			named++
			m := mapAt(c.maps[pid], leaf)
			if m == nil || !strings.HasSuffix(m.Filename, "upgraded (deleted)") {
				t.Fatalf("%s: fixture_leaf at %#x in %+v, want the file marked deleted", run, leaf, m)
			}
			fr, ok := lines.Lookup(pid, leaf)
			if !ok && m.BuildID != "" {
				fr, ok = lines.LookupObject(m.BuildID, leaf-m.Start+m.Offset)
			}
			if ok && len(fr) > 0 && filepath.Base(fr[0].File) == "callchain.c" && fr[0].Line > 0 {
				lined++
			}
		}
		// Two busy threads for a second: 50 samples even when the
		// other packages' tests share the CPUs.
		if named < 50 || lined < named*9/10 {
			t.Errorf("%s: %d samples in fixture_leaf, %d of them at a line of callchain.c; want 50 or more, nearly all at a line", run, named, lined)
		}
		t.Logf("%s: %d samples in fixture_leaf, %d at a line", run, named, lined)
	}
}

// symbolsOf returns the symbols c bundles.
func symbolsOf(t *testing.T, c *captured) *capture.SymbolTable {
	t.Helper()
	b, err := c.files.Lookup(capture.SymbolsFile)
	if err != nil {
		t.Fatal(err)
	}
	syms, err := capture.DecodeSymbols(b)
	if err != nil {
		t.Fatal(err)
	}
	return syms
}

// bundleOf returns the symbols and source lines c bundles.
func bundleOf(t *testing.T, c *captured) (*capture.SymbolTable, *capture.LineTable) {
	t.Helper()
	syms := symbolsOf(t, c)
	z, err := c.files.Lookup(capture.LinesFile + ".gz")
	if err != nil {
		t.Fatal(err)
	}
	lines, err := capture.DecodeLinesGzip(capture.LinesFile+".gz", z, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	return syms, lines
}

// mapAt returns the last of maps covering address a, nil if none does.
func mapAt(maps []*capture.Map, a uint64) *capture.Map {
	var found *capture.Map
	for _, m := range maps {
		if m.Start <= a && a < m.End {
			found = m
		}
	}
	return found
}

// TestRecordMemfdJIT records a JIT whose code is in a memfd (as .NET's
// W^X double mapping keeps it): a mapping named "/memfd:doublemapper
// (deleted)" that is no ELF file. Its code is named from the JIT's perf
// map, as the code of anonymous memory is, not taken for a deleted file.
func TestRecordMemfdJIT(t *testing.T) {
	requirePerf(t)
	cmd := exec.Command(testutils.BuildFixture(t, "memfdjit"), "5")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	time.Sleep(200 * time.Millisecond)
	pid := int32(cmd.Process.Pid)
	opts := quiet
	opts.PIDs = []int{cmd.Process.Pid}
	opts.Duration = time.Second
	path, _ := recordTo(t, context.Background(), opts)
	c := load(t, path)
	syms := symbolsOf(t, c)
	named, other := 0, map[string]int{}
	for _, s := range c.samples {
		if s.PID != pid || len(s.Addrs) < 2 {
			continue
		}
		if sym, ok := syms.Lookup(pid, s.Addrs[1]); ok && sym.Name == "memfd_jit_code" {
			named++
		} else {
			other[sym.Name]++
		}
	}
	if named < 50 || named < len(c.samples)/2 {
		t.Errorf("%d of %d samples in memfd_jit_code; want most (others: %v)", named, len(c.samples), other)
	}
}
