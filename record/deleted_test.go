package record

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"nsprof/analyze"
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
	opts := quiet
	opts.PIDs = []int{cmd.Process.Pid}
	opts.Duration = time.Second
	opts.SymbolCache = t.TempDir()
	waitFillers(t) // after the TempDir: its cleanup runs first
	for _, run := range []string{"first", "from the cache"} {
		path, _ := recordTo(t, context.Background(), opts)
		p, err := analyze.LoadFile(path, analyze.LoadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		rows, _ := p.TopLines(p.Samples, 0)
		named, lined := 0, 0
		for _, r := range rows {
			if r.Name != "fixture_leaf" {
				continue
			}
			named += r.Self
			if filepath.Base(r.File) == "callchain.c" && r.Line > 0 {
				lined += r.Self
			}
			if !strings.HasSuffix(r.DSO, "(deleted)") {
				t.Errorf("%s: fixture_leaf in %q, want the file marked deleted", run, r.DSO)
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
	opts := quiet
	opts.PIDs = []int{cmd.Process.Pid}
	opts.Duration = time.Second
	path, _ := recordTo(t, context.Background(), opts)
	p, err := analyze.LoadFile(path, analyze.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	named := 0
	for _, r := range p.Top(p.Samples) {
		if r.Name == "memfd_jit_code" {
			named = r.Self
		}
	}
	if named < len(p.Samples)/2 {
		t.Errorf("%d of %d samples in memfd_jit_code; want most: %+v", named, len(p.Samples), p.Top(p.Samples)[:min(5, len(p.Samples))])
	}
}
