package e2e

import (
	"os/exec"
	"path/filepath"
	"testing"

	"nsprof/internal/testutils"
)

// With --call-graph dwarf the capture holds ordinary callchains, so
// Sysprof 3.46's own reader and resolver see whole stacks of code built
// without frame pointers: every sample in the fixture's comparator reaches
// main or the thread start routine through libc's qsort.
func TestSysprofReadsDWARFStacks(t *testing.T) {
	bin := testutils.BuildFixture(t, "omitfp", "-O2", "-fomit-frame-pointer")
	out := filepath.Join(t.TempDir(), "capture.syscap")
	cmd := exec.Command(nsprofBin, "record", "--call-graph", "dwarf", "-o", out, "--no-cpu", "--no-memory", "--no-disk", "--no-network", "--", bin, "1", "1")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("nsprof record: %v\n%s", err, b)
	}
	sum := map[string]int{}
	for _, fns := range sysprofNames(t, out) {
		for fn, n := range fns {
			sum[fn] += n
		}
	}
	t.Logf("Sysprof names: omitfp_weigh %d, omitfp_compare %d, qsort_r %d, main %d, omitfp_thread %d",
		sum["omitfp_weigh"], sum["omitfp_compare"], sum["qsort_r"], sum["main"], sum["omitfp_thread"])
	// A second of one thread at 999 Hz: about a thousand samples on an
	// idle CPU, fewer on a loaded machine (440 seen in CI): enough to
	// tell crossed libc frames from none.
	if sum["omitfp_weigh"] < 200 {
		t.Fatalf("Sysprof names omitfp_weigh in %d frames only", sum["omitfp_weigh"])
	}
	if sum["qsort_r"] < sum["omitfp_compare"] {
		t.Errorf("qsort_r in %d frames, fewer than omitfp_compare's %d: libc frames are not crossed", sum["qsort_r"], sum["omitfp_compare"])
	}
	if roots := sum["main"] + sum["omitfp_thread"]; roots < sum["omitfp_compare"] {
		t.Errorf("main and omitfp_thread in %d frames, fewer than omitfp_compare's %d", roots, sum["omitfp_compare"])
	}
}
