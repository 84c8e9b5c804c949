package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// hotPID returns the process of names (from sysprofNames) that Sysprof
// names dbg_hot_leaf in; it fails the test unless there is exactly one.
func hotPID(t *testing.T, what string, names map[int]map[string]int) int {
	t.Helper()
	var pids []int
	for pid, fns := range names {
		if fns["dbg_hot_leaf"] > 0 {
			pids = append(pids, pid)
		}
	}
	if len(pids) != 1 {
		t.Fatalf("%s: Sysprof names dbg_hot_leaf in processes %v, want one; names %v", what, pids, names)
	}
	return pids[0]
}

// TestCatSysprofNamesEveryInput records the dbg-hot fixture twice and
// merges the captures with nsprof cat: Sysprof 3.46's resolver names the
// fixture's functions in both processes of the merged capture (it reads
// one __symbols__ bundle, so cat must merge the inputs' into one, found
// behind its METADATA frame), and nsprof report, with the binary gone,
// names both from the bundle alone.
func TestCatSysprofNamesEveryInput(t *testing.T) {
	bin := cFixture(t, false)
	dir := t.TempDir()
	var caps []string
	for _, name := range []string{"a.syscap", "b.syscap"} {
		p := filepath.Join(dir, name)
		nsprof(t, "record", "-o", p, "--no-cpu", "--no-memory", "--no-disk", "--no-network", "--", bin, "1")
		caps = append(caps, p)
	}
	pa := hotPID(t, "a.syscap", sysprofNames(t, caps[0]))
	pb := hotPID(t, "b.syscap", sysprofNames(t, caps[1]))
	if pa == pb {
		t.Fatalf("both recordings have pid %d", pa)
	}
	merged := filepath.Join(dir, "ab.syscap")
	nsprof(t, "cat", caps[0], caps[1], "-o", merged)
	if err := os.Remove(bin); err != nil { // names must come from the capture
		t.Fatal(err)
	}

	names := sysprofNames(t, merged)
	for _, pid := range []int{pa, pb} {
		for _, fn := range []string{"dbg_hot_leaf", "dbg_hot_middle", "dbg_hot_outer", "main"} {
			if names[pid][fn] == 0 {
				t.Errorf("Sysprof's resolver does not name %s in process %d of the merged capture; it names %v", fn, pid, names[pid])
			}
		}
	}
	// One bundle, right behind its METADATA frame.
	files := nsprof(t, "dump", "--files", merged)
	if n := strings.Count(files, "\n__symbols__ "); n != 1 {
		t.Errorf("dump --files lists %d __symbols__ files, want 1:\n%s", n, files)
	}
	meta := nsprof(t, "dump", "-t", "METADATA", merged)
	if n := strings.Count(meta, `id="nsprof.symbols-follow"`); n != 1 {
		t.Errorf("%d nsprof.symbols-follow METADATA frames, want 1:\n%s", n, meta)
	}

	r := reportJSON(t, merged, "--by", "process")
	if r.Capture.Symbols["unresolved"] != 0 || r.Capture.Symbols["bundle"] == 0 {
		t.Errorf("report symbols %v, want every frame from the bundle", r.Capture.Symbols)
	}
	seen := map[int32]bool{}
	for _, g := range r.Groups {
		for _, f := range g.Functions {
			if f.Name == "dbg_hot_leaf" && f.Self > 0 {
				seen[g.PID] = true
			}
		}
	}
	if !seen[int32(pa)] || !seen[int32(pb)] {
		t.Errorf("nsprof report names dbg_hot_leaf in processes %v, want %d and %d", seen, pa, pb)
	}
}
