//go:build linux

package e2e

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"nsprof/internal/testutils"
)

// TestReportLinesAsPerf: `nsprof report --lines` gives the hot functions
// of a C program built with debug information the source lines `perf
// report --sort sym,srcline` gives them, from perf's own recording of
// the same program: each line that holds a tenth of a function's samples
// in one report is one of that function's lines in the other. (Two
// recordings: the shares differ a little, the lines do not.)
func TestReportLinesAsPerf(t *testing.T) {
	perf := testutils.LookPathOrSkip(t, "perf")
	// perf aborts on another session's build-id MMAP2 records (see
	// TestRecordBesidePerf): no system-wide recording beside it.
	testutils.SystemWide(t, true)
	bin := cFixture(t, false)
	dir := t.TempDir()
	capture := filepath.Join(dir, "n.syscap")
	nsprof(t, "record", "-o", capture, "--no-cpu", "--no-memory", "--no-disk", "--no-network", "--", bin, "2")
	data := filepath.Join(dir, "p.data")
	if out, err := exec.Command(perf, "record", "-q", "-F", "999", "-o", data, "--", bin, "2").CombinedOutput(); err != nil {
		t.Fatalf("perf record: %v\n%s", err, out)
	}
	out, err := exec.Command(perf, "report", "-i", data, "--stdio", "--no-children", "--sort", "sym,srcline", "-q").CombinedOutput()
	if err != nil {
		t.Fatalf("perf report: %v\n%s", err, out)
	}
	// "    38.87%  [.] dbg_hot_leaf  dbg-hot.c:15"
	perfLines := map[string]map[string]float64{} // function -> file:line -> percent
	for _, l := range strings.Split(string(out), "\n") {
		f := strings.Fields(l)
		if len(f) < 4 || f[1] != "[.]" {
			continue
		}
		pct, err := strconv.ParseFloat(strings.TrimSuffix(f[0], "%"), 64)
		if err != nil {
			continue
		}
		if perfLines[f[2]] == nil {
			perfLines[f[2]] = map[string]float64{}
		}
		perfLines[f[2]][f[3]] += pct
	}
	var doc struct {
		Lines  bool `json:"lines"`
		Groups []struct {
			Functions []struct {
				Name string `json:"function"`
				Self int    `json:"self"`
				File string `json:"file"`
				Line int    `json:"line"`
			} `json:"functions"`
		} `json:"groups"`
	}
	if err := json.Unmarshal([]byte(nsprof(t, "report", capture, "--lines", "--json", "--limit", "0")), &doc); err != nil {
		t.Fatal(err)
	}
	ourLines := map[string]map[string]float64{}
	for _, g := range doc.Groups {
		for _, f := range g.Functions {
			if f.Self == 0 {
				continue
			}
			if ourLines[f.Name] == nil {
				ourLines[f.Name] = map[string]float64{}
			}
			src := "??:0"
			if f.File != "" {
				src = filepath.Base(f.File) + ":" + strconv.Itoa(f.Line)
			}
			ourLines[f.Name][src] += float64(f.Self)
		}
	}
	if !doc.Lines {
		t.Error(`report --lines --json: no "lines": true`)
	}
	for _, fn := range []string{"dbg_hot_leaf", "dbg_hot_step"} {
		ours, theirs := ourLines[fn], perfLines[fn]
		t.Logf("%s: nsprof %v, perf %v", fn, ours, theirs)
		if len(ours) == 0 || len(theirs) == 0 {
			t.Fatalf("%s: lines %v in nsprof's report, %v in perf's", fn, ours, theirs)
		}
		for _, c := range []struct {
			who         string
			lines, them map[string]float64
		}{{"nsprof", ours, theirs}, {"perf", theirs, ours}} {
			sum := 0.0
			for _, v := range c.lines {
				sum += v
			}
			for src, v := range c.lines {
				if v >= sum/10 && c.them[src] == 0 {
					t.Errorf("%s: %s has %s at %.0f%% of its samples; the other report has not that line (nsprof %v, perf %v)", fn, c.who, src, 100*v/sum, ours, theirs)
				}
			}
		}
	}
}
