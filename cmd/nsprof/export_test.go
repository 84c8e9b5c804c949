package main

import (
	"bufio"
	"encoding/json"
	"encoding/xml"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/pprof/profile"

	"nsprof/analyze"
	"nsprof/internal/testcaptures"
	"nsprof/internal/testutils"
)

// foldedByName re-aggregates folded stacks into samples, and self and
// total samples per function name (total once per stack).
func foldedByName(t *testing.T, out string) (n int, self, total map[string]int) {
	t.Helper()
	self, total = map[string]int{}, map[string]int{}
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		i := strings.LastIndexByte(line, ' ')
		c, err := strconv.Atoi(line[i+1:])
		if i < 0 || err != nil {
			t.Fatalf("bad folded line %q", line)
		}
		frames := strings.Split(line[:i], ";")
		n += c
		self[frames[len(frames)-1]] += c
		seen := map[string]bool{}
		for _, f := range frames {
			if !seen[f] {
				seen[f] = true
				total[f] += c
			}
		}
	}
	return n, self, total
}

// reportByName runs `nsprof report --json` with args and sums its
// functions' self and total samples by name.
func reportByName(t *testing.T, args ...string) (n int, self, total map[string]int) {
	t.Helper()
	out, stderr, status := nsprof(t, nil, append([]string{"report", "--json", "--limit", "0"}, args...)...)
	if status != 0 {
		t.Fatalf("report: status %d: %s", status, stderr)
	}
	var doc struct {
		Selected int `json:"selected"`
		Groups   []struct {
			Functions []analyze.FuncStat `json:"functions"`
		} `json:"groups"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	self, total = map[string]int{}, map[string]int{}
	for _, g := range doc.Groups {
		for _, f := range g.Functions {
			if f.Self > 0 {
				self[f.Name] += f.Self
			}
			total[f.Name] += f.Total
		}
	}
	return doc.Selected, self, total
}

func sameCounts(a, b map[string]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// checkFoldedMatchesReport exports folded stacks with args and compares
// them with the report of the same args.
func checkFoldedMatchesReport(t *testing.T, path string, args ...string) {
	t.Helper()
	out, stderr, status := nsprof(t, nil, append([]string{"export", path, "--format", "folded", "--no-process-root"}, args...)...)
	if status != 0 {
		t.Fatalf("export: status %d: %s", status, stderr)
	}
	n, self, total := foldedByName(t, out)
	rn, rself, rtotal := reportByName(t, append([]string{path}, args...)...)
	if n != rn || !sameCounts(self, rself) || !sameCounts(total, rtotal) {
		t.Errorf("folded %v: %d samples, self %v, total %v\nreport: %d samples, self %v, total %v", args, n, self, total, rn, rself, rtotal)
	}
}

func TestExportFoldedMatchesReport(t *testing.T) {
	path, n := writeReportCapture(t, t.TempDir())
	for _, args := range [][]string{
		nil,
		{"--pid", "10"},
		{"--focus", "work"},
		{"--hide-kernel", "--since", "0.002"},
	} {
		checkFoldedMatchesReport(t, path, args...)
	}
	// As stackcollapse-perf.pl: the comm at the root, by default.
	out, _, _ := nsprof(t, nil, "export", path, "--format", "folded")
	if want := "client;main;idle 2\nserver;main;work 1\nserver;main;work;hot 3\n"; out != want {
		t.Errorf("folded:\n%s\nwant:\n%s", out, want)
	}
	if got, _, _ := foldedByName(t, out); got != n {
		t.Errorf("%d samples, want %d", got, n)
	}
	for _, off := range [][]string{{"--no-process-root"}, {"--by", "none"}} {
		out, _, _ := nsprof(t, nil, append([]string{"export", path, "--format", "folded"}, off...)...)
		if want := "main;idle 2\nmain;work 1\nmain;work;hot 3\n"; out != want {
			t.Errorf("folded %v:\n%s\nwant:\n%s", off, out, want)
		}
	}
}

func TestExportFormats(t *testing.T) {
	dir := t.TempDir()
	path, n := writeReportCapture(t, dir)
	p, pb := exportPprof(t, path)
	total := int64(0)
	for _, s := range p.Sample {
		total += s.Value[0]
	}
	if total != int64(n) || len(p.Mapping) != 2 {
		t.Errorf("pprof: %d samples, %d mappings", total, len(p.Mapping))
	}
	if _, stderr, status := nsprof(t, nil, "export", path, "--format", "pprof", "-o", pb); status != 1 || !strings.Contains(stderr, "exists") {
		t.Errorf("existing output without -f: status %d, %s", status, stderr)
	}
	if _, stderr, status := nsprof(t, nil, "export", path, "--format", "pprof", "-f", "-o", pb); status != 0 {
		t.Errorf("-f: status %d, %s", status, stderr)
	}

	out, _, status := nsprof(t, nil, "export", path, "--format", "speedscope", "--title", "srv")
	if status != 0 {
		t.Fatalf("speedscope: status %d", status)
	}
	if ps := testutils.CheckSpeedscope(t, []byte(out)); len(ps) != 2 || ps[0]["name"] != "server [pid 10 tid 10]" {
		t.Errorf("speedscope profiles %v", ps)
	}
	out, _, status = nsprof(t, nil, "export", path, "--format", "svg", "--by", "comm", "--invert")
	if status != 0 || xml.Unmarshal([]byte(out), new(struct{})) != nil || !strings.Contains(out, `data-name="server"`) {
		t.Errorf("svg: status %d:\n%.300s", status, out)
	}

	for _, tc := range []struct {
		args []string
		msg  string
	}{
		{[]string{"export", path}, "--format is required"},
		{[]string{"export", path, "--format", "json"}, "unknown export format"},
		{[]string{"export", "--format", "folded"}, "which capture? give FILE or -i FILE"},
		{[]string{"export", path, "--format", "pprof", "--invert"}, "pprof takes neither"},
		{[]string{"export", path, "--format", "folded", "--by", "cpu"}, "unknown grouping"},
		{[]string{"export", path, "--format", "folded", "--comm", "("}, "--comm"},
	} {
		if _, stderr, status := nsprof(t, nil, tc.args...); status != 2 || !strings.Contains(stderr, tc.msg) {
			t.Errorf("%v: status %d, stderr %q, want 2 and %q", tc.args, status, stderr, tc.msg)
		}
	}
	if _, stderr, status := nsprof(t, nil, "export", filepath.Join(dir, "missing"), "--format", "folded"); status != 1 || !strings.Contains(stderr, "missing") {
		t.Errorf("missing input: status %d, %s", status, stderr)
	}
}

// sysprofCapture writes the capture Sysprof 3.46's sysprof-cli recorded
// (analyze/testdata) to a temporary file.
func sysprofCapture(t *testing.T) string {
	t.Helper()
	data := testcaptures.Sysprof(t)
	path := filepath.Join(t.TempDir(), "sysprof.syscap")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestSysprofCaptureEveryView opens the capture of Sysprof's own
// sysprof-cli in every report view and export format.
func TestSysprofCaptureEveryView(t *testing.T) {
	path := sysprofCapture(t)
	for _, args := range [][]string{
		{}, {"--tree"}, {"--bottom-up"}, {"--by", "comm"}, {"--json"}, {"--hide-kernel", "--focus", "fixture_outer", "--tree"},
		{"--marks"}, {"--counters"}, {"--processes"}, {"--logs"}, {"--summary"}, {"--summary", "--json"}, {"--processes", "--json"},
	} {
		t.Run("report"+strings.Join(args, ""), func(t *testing.T) {
			out, stderr, status := nsprof(t, nil, append(append([]string{"report"}, args...), path)...)
			if status != 0 || out == "" {
				t.Fatalf("status %d, stderr %s", status, stderr)
			}
			if strings.Contains(strings.Join(args, " "), "--summary") && !strings.Contains(out, "164") {
				t.Errorf("summary without the 164 samples:\n%s", out)
			}
			if strings.Contains(strings.Join(args, " "), "--processes") && !strings.Contains(out, "callchain") {
				t.Errorf("processes without the fixture:\n%s", out)
			}
		})
	}
	for _, format := range []string{"pprof", "speedscope", "folded", "svg"} {
		t.Run("export-"+format, func(t *testing.T) {
			out, stderr, status := nsprof(t, nil, "export", path, "--format", format)
			if status != 0 {
				t.Fatalf("status %d, stderr %s", status, stderr)
			}
			switch format {
			case "pprof":
				p, err := profile.ParseData([]byte(out))
				if err != nil {
					t.Fatal(err)
				}
				if len(p.Sample) == 0 || len(p.Mapping) == 0 {
					t.Errorf("%d samples, %d mappings", len(p.Sample), len(p.Mapping))
				}
			case "speedscope":
				testutils.CheckSpeedscope(t, []byte(out))
			case "folded":
				if n, _, _ := foldedByName(t, out); n != 164 {
					t.Errorf("%d samples, want 164", n)
				}
			case "svg":
				d := xml.NewDecoder(strings.NewReader(out))
				for {
					if _, err := d.Token(); err == io.EOF {
						break
					} else if err != nil {
						t.Fatalf("svg: %v", err)
					}
				}
				if !strings.Contains(out, "fixture_leaf") {
					t.Error("svg without fixture_leaf")
				}
			}
		})
	}
	checkFoldedMatchesReport(t, path)
	checkFoldedMatchesReport(t, path, "--comm", "callchain", "--hide-kernel")
}

// pprofTop runs `go tool pprof -top` on a profile and returns each
// function's flat and cumulative percentages.
func pprofTop(t *testing.T, pb string) (flat, cum map[string]float64) {
	t.Helper()
	gobin := testutils.LookPathOrSkip(t, "go")
	out, err := exec.Command(gobin, "tool", "pprof", "-top", pb).CombinedOutput()
	if err != nil {
		t.Fatalf("go tool pprof -top: %v\n%s", err, out)
	}
	flat, cum = map[string]float64{}, map[string]float64{}
	rows := false
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) == 5 && f[0] == "flat" {
			rows = true
			continue
		}
		if !rows || len(f) < 6 {
			continue
		}
		fp, err1 := strconv.ParseFloat(strings.TrimSuffix(f[1], "%"), 64)
		cp, err2 := strconv.ParseFloat(strings.TrimSuffix(f[4], "%"), 64)
		if err1 != nil || err2 != nil {
			t.Fatalf("pprof row %q", line)
		}
		name := strings.Join(f[5:], " ")
		flat[name], cum[name] = fp, cp
	}
	if len(flat) == 0 {
		t.Fatalf("no rows in go tool pprof -top:\n%s", out)
	}
	return flat, cum
}

// TestExportRecordedFixture records the shares fixture (3:1 work in
// share_three and share_one) with nsprof record, exports it to pprof and
// reads it with go tool pprof -top: the fixture's functions have their
// expected shares. The folded export of the recording re-aggregates to
// the report's numbers.
func TestExportRecordedFixture(t *testing.T) {
	bin := testutils.BuildFixture(t, "shares")
	dir := t.TempDir()
	capPath := filepath.Join(dir, "shares.syscap")
	cmd, stderr := nsprofProcess(t, "record", "--no-cpu", "--no-memory", "--no-disk", "--no-network", "-o", capPath, "--", bin, "1.5")
	if err := cmd.Run(); err != nil {
		t.Fatalf("record: %v\n%s", err, stderr)
	}
	for _, tc := range []struct {
		name           string
		args           []string
		threeLo, oneLo float64
	}{
		{"plain", nil, 60, 18},
		{"hide-kernel", []string{"--hide-kernel"}, 68, 19},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pb := filepath.Join(dir, tc.name+".pb.gz")
			args := append([]string{"export", capPath, "--format", "pprof", "--comm", "^shares", "-o", pb}, tc.args...)
			if _, stderr, status := nsprof(t, nil, args...); status != 0 {
				t.Fatalf("export: status %d: %s", status, stderr)
			}
			flat, cum := pprofTop(t, pb)
			three, one := flat["share_three"], flat["share_one"]
			if three < tc.threeLo || three > 82 || one < tc.oneLo || one > 32 {
				t.Errorf("flat share_three %.2f%%, share_one %.2f%%: want about 75%% and 25%%\nflat %v", three, one, flat)
			}
			if r := three / max(one, 0.01); r < 2.3 || r > 4 {
				t.Errorf("share_three/share_one = %.2f, want about 3", r)
			}
			if cum["shares_loop"] < 95 || cum["main"] < 95 {
				t.Errorf("cum shares_loop %.2f%%, main %.2f%%: want about 100%%", cum["shares_loop"], cum["main"])
			}
		})
	}
	checkFoldedMatchesReport(t, capPath)
	checkFoldedMatchesReport(t, capPath, "--comm", "^shares", "--hide-kernel")
}

// TestExportNoContainer: an export whose --container names none of the
// capture's containers warns so, naming them, as report does.
func TestExportNoContainer(t *testing.T) {
	path := writeTestCapture(t, t.TempDir(), "c.syscap")
	out := filepath.Join(t.TempDir(), "out.folded")
	_, stderr, status := nsprof(t, nil, "export", path, "--format", "folded", "--container", "nosuch", "-o", out)
	if status != 0 || !strings.Contains(stderr, `no samples selected: no process ran in a container matching "nosuch"; the capture's: `) {
		t.Errorf("status %d, stderr %q", status, stderr)
	}
	report, _, _ := nsprof(t, nil, "report", path, "--container", "nosuch")
	if !strings.Contains(report, `no samples: no process ran in a container matching "nosuch"`) {
		t.Errorf("report:\n%s", report)
	}
}
