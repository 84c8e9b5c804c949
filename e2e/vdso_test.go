//go:build linux

package e2e

import (
	"path/filepath"
	"strings"
	"testing"

	"nsprof/internal/testutils"
)

// A program reading the clock in a tight loop spends most of its time in
// the vdso, which is in no file: its functions are named from the image
// read out of the process, bundled in the capture, as perf names them.
func TestVDSONamed(t *testing.T) {
	bin := testutils.BuildFixture(t, "vdsoclock", "-O2")
	for _, mode := range []string{"fp", "dwarf"} {
		t.Run(mode, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "capture.syscap")
			nsprof(t, "record", "--call-graph", mode, "-o", out, "--no-cpu", "--no-memory", "--no-disk", "--no-network", "--", bin, "2")
			r := reportJSON(t, out)
			if len(r.Groups) != 1 || r.Capture.Samples < 200 {
				t.Fatalf("%d groups, %d samples", len(r.Groups), r.Capture.Samples)
			}
			named, unnamed := 0, 0
			var names []string
			for _, f := range r.Groups[0].Functions {
				if f.DSO != "[vdso]" {
					continue
				}
				names = append(names, f.Name)
				if strings.HasSuffix(f.Name, "clock_gettime") {
					named += f.Self
				} else if strings.HasPrefix(f.Name, "[vdso]") || strings.HasPrefix(f.Name, "[unknown") {
					unnamed += f.Self
				}
			}
			if named*2 < r.Capture.Samples || unnamed > 0 {
				t.Errorf("vdso clock_gettime self %d of %d samples, %d in unnamed vdso addresses; vdso functions %q",
					named, r.Capture.Samples, unnamed, names)
			}
		})
	}
}
