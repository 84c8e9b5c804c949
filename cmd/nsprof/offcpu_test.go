package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"nsprof/internal/testutils"
)

// offCPUFixture records the offcpu fixture (iterations of 200 ms asleep
// in fixture_block, then 100 ms of wall-clock time in fixture_spin) with
// record --off-cpu and returns the capture and what the fixture measured
// of its own functions, in ns.
func offCPUFixture(t *testing.T, iterations int) (capPath string, block, spin int64) {
	t.Helper()
	if os.Geteuid() != 0 {
		testutils.RequireCI(t, "recording tests need root")
	}
	bin := testutils.BuildFixture(t, "offcpu")
	dir := t.TempDir()
	capPath = filepath.Join(dir, "off.syscap")
	out := filepath.Join(dir, "times")
	_, stderr, status := nsprof(t, nil, "record", "--off-cpu", "-o", capPath, "--", bin, fmt.Sprint(iterations), "200", "100", out)
	if status != 0 {
		t.Fatalf("record --off-cpu: status %d\n%s", status, stderr)
	}
	if !strings.Contains(stderr, "off-CPU: ") {
		t.Errorf("record --off-cpu does not log its off-CPU counts:\n%s", stderr)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fmt.Sscanf(string(b), "block %d spin %d", &block, &spin); err != nil {
		t.Fatalf("fixture output %q: %v", b, err)
	}
	return capPath, block, spin
}

// functionTotals runs report --json with args and returns each
// function's total value and the sample type's name.
func functionTotals(t *testing.T, capPath string, args ...string) (map[string]int64, string) {
	t.Helper()
	out, stderr, status := nsprof(t, nil, append([]string{"report", capPath, "--json", "--limit", "0"}, args...)...)
	if status != 0 {
		t.Fatalf("report %q: status %d\n%s", args, status, stderr)
	}
	var r valueReport
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("report %q: %v\n%s", args, err, out)
	}
	totals := make(map[string]int64)
	for _, g := range r.Groups {
		for _, f := range g.Functions {
			totals[f.Name] += int64(f.Total)
		}
	}
	typ := ""
	if r.SampleType != nil {
		typ = r.SampleType.Type
	}
	return totals, typ
}

// TestOffCPUFixture: recorded with --off-cpu, the fixture's blocking
// function carries its known time asleep (iterations x 200 ms) within 5 %
// in the off_cpu column, under a leaf frame naming the sleep; the
// default view still shows CPU samples only; and --wall splits the run
// between the blocking and the spinning function as the fixture measured
// it (2:1 by construction: the spin lasts 100 ms of wall-clock time
// however loaded the machine is, its preempted time being off-CPU time
// in state R), within 10 %: sampling counts whole periods of about 1 ms.
func TestOffCPUFixture(t *testing.T) {
	const iterations = 5
	capPath, block, spin := offCPUFixture(t, iterations)
	want := int64(iterations * 200e6)

	off, typ := functionTotals(t, capPath, "--off-cpu")
	if typ != "off_cpu" {
		t.Fatalf("report --off-cpu: sample type %q, want off_cpu", typ)
	}
	got := off["fixture_block"]
	t.Logf("off_cpu: fixture_block %.3fs (%d x 200ms = %.3fs; the fixture measured %.3fs); [off-CPU: S sleeping] %.3fs",
		float64(got)/1e9, iterations, float64(want)/1e9, float64(block)/1e9, float64(off["[off-CPU: S sleeping]"])/1e9)
	if math.Abs(float64(got-want)) > 0.05*float64(want) {
		t.Errorf("off_cpu of fixture_block: %d ns, want %d ns within 5%%", got, want)
	}
	if s := off["[off-CPU: S sleeping]"]; s < got*95/100 {
		t.Errorf("off_cpu under [off-CPU: S sleeping]: %d ns, want at least fixture_block's %d", s, got)
	}

	cpu, _ := functionTotals(t, capPath)
	for name := range cpu {
		if strings.HasPrefix(name, "[off-CPU") {
			t.Errorf("the default view (CPU samples) has off-CPU frame %s", name)
		}
	}
	if cpu["fixture_spin"] == 0 {
		t.Errorf("no CPU sample in fixture_spin: %v", cpu)
	}

	wall, typ := functionTotals(t, capPath, "--wall")
	if typ != "wall" {
		t.Fatalf("report --wall: sample type %q, want wall", typ)
	}
	wb, ws := wall["fixture_block"], wall["fixture_spin"]
	if ws == 0 {
		t.Fatalf("--wall: nothing in fixture_spin: %v", wall)
	}
	ratio, known := float64(wb)/float64(ws), float64(block)/float64(spin)
	t.Logf("wall: fixture_block %.3fs, fixture_spin %.3fs: ratio %.3f; the fixture measured %.3fs and %.3fs: %.3f",
		float64(wb)/1e9, float64(ws)/1e9, ratio, float64(block)/1e9, float64(spin)/1e9, known)
	if math.Abs(ratio-known) > 0.1*known {
		t.Errorf("--wall splits fixture_block:fixture_spin %.3f, the fixture measured %.3f (want within 10%%)", ratio, known)
	}
	if math.Abs(float64(ws-spin)) > 0.1*float64(spin) {
		t.Errorf("--wall: fixture_spin %d ns, the fixture measured %d ns (want within 10%%)", ws, spin)
	}
}
