package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"nsprof/capture"
	"nsprof/internal/testcaptures"
	nsreport "nsprof/report"
)

// writeReportCapture writes a capture with two processes and known
// stacks, named by a __symbols__ bundle: pid 10 samples main>work>hot 3
// times and main>work once (self in work); pid 20 samples main>idle twice
// at 5 ms. It returns the path and the number of samples.
func writeReportCapture(t *testing.T, dir string) (string, int) {
	t.Helper()
	path := filepath.Join(dir, "r.syscap")
	w, err := capture.CreateWithOptions(path, capture.WriterOptions{
		StartTime: testStart, EndTime: testStart + 1e7,
		CaptureTime: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
		Clock:       func() int64 { return math.MinInt64 },
	})
	if err != nil {
		t.Fatal(err)
	}
	h := func(pid int32, ms int64) capture.FrameHeader {
		return capture.FrameHeader{CPU: 0, PID: pid, Time: testStart + ms*1e6}
	}
	const main, work, hot, idle = 0x1010, 0x1110, 0x1210, 0x1310
	stacks := []struct {
		pid   int32
		ms    int64
		addrs []uint64
		n     int
	}{
		{10, 1, []uint64{hot, work, main}, 3},
		{10, 2, []uint64{work, main}, 1},
		{20, 5, []uint64{idle, main}, 2},
	}
	frames := []capture.Frame{
		&capture.Process{FrameHeader: h(10, 0), Cmdline: "/usr/bin/server --port 80"},
		&capture.Process{FrameHeader: h(20, 0), Cmdline: "/usr/bin/client"},
		&capture.Map{FrameHeader: h(10, 0), Start: 0x1000, End: 0x2000, Filename: "/usr/bin/server"},
		&capture.Map{FrameHeader: h(20, 0), Start: 0x1000, End: 0x2000, Filename: "/usr/bin/client"},
	}
	total := 0
	for _, s := range stacks {
		for range s.n {
			frames = append(frames, &capture.Sample{FrameHeader: h(s.pid, s.ms), TID: s.pid, Addrs: append([]uint64{capture.ContextUser}, s.addrs...)})
			total++
		}
	}
	for _, f := range frames {
		if err := w.WriteFrame(f); err != nil {
			t.Fatal(err)
		}
	}
	var syms []capture.Symbol
	for _, pid := range []int32{10, 20} {
		for name, a := range map[string]uint64{"main": main, "work": work, "hot": hot, "idle": idle} {
			syms = append(syms, capture.Symbol{PID: pid, Begin: a &^ 0xff, End: a | 0xff, Name: name})
		}
	}
	b, err := capture.EncodeSymbols(syms)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.AddFileGzip(h(-1, 9), capture.SymbolsFile, b); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return path, total
}

// tableRow finds the function table row of name and returns its fields.
func tableRow(t *testing.T, out, name string) []string {
	t.Helper()
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) == 5 && f[3] == name {
			return f
		}
	}
	t.Fatalf("no row for %s in:\n%s", name, out)
	return nil
}

func TestReportText(t *testing.T) {
	path, n := writeReportCapture(t, t.TempDir())
	out, stderr, status := nsprof(t, nil, "report", path)
	if status != 0 || stderr != "" {
		t.Fatalf("status %d, stderr %q", status, stderr)
	}
	// Six frames: work is a leaf once and a caller (a return address,
	// named from the call) on other stacks, which are two frames.
	if !strings.HasPrefix(out, path+": 0.009s, 6 samples of 2 processes, 2 processes in the capture\nsymbols (frames): bundle 6, unresolved 0\n") {
		t.Errorf("header:\n%s", out)
	}
	// hot is the leaf of 3 of 6 samples; work of 1, on the stack of 4;
	// main of server on 4 stacks, the leaf of none (main of client is
	// another function: another DSO).
	for name, want := range map[string][]string{
		"hot":  {"50.0%", "50.0%", "3", "hot", "server"},
		"idle": {"33.3%", "33.3%", "2", "idle", "client"},
		"work": {"16.7%", "66.7%", "1", "work", "server"},
		"main": {"0.0%", "66.7%", "0", "main", "server"},
	} {
		if got := tableRow(t, out, name); strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("%s row %v, want %v", name, got, want)
		}
	}
	if n != 6 {
		t.Fatalf("capture has %d samples", n)
	}

	out, _, _ = nsprof(t, nil, "report", "--limit", "2", path)
	if !strings.Contains(out, "… 3 more functions") || strings.Contains(out, " work ") {
		t.Errorf("--limit 2:\n%s", out)
	}

	out, _, _ = nsprof(t, nil, "report", "--pid", "20", path)
	if !strings.Contains(out, "selected 2 of 6 samples") || tableRow(t, out, "idle")[0] != "100.0%" {
		t.Errorf("--pid 20:\n%s", out)
	}
	out, _, _ = nsprof(t, nil, "report", "--comm", "serv", "--since", "2ms", path)
	if !strings.Contains(out, "selected 1 of 6 samples") {
		t.Errorf("--comm serv --since 2ms:\n%s", out)
	}

	out, _, _ = nsprof(t, nil, "report", "--tree", "--comm", "server", path)
	wantTree := "" +
		" 100.0%    0.0%  main [server]\n" +
		" 100.0%   25.0%    work [server]\n" +
		"  75.0%   75.0%      hot [server]\n"
	if !strings.Contains(out, wantTree) {
		t.Errorf("--tree:\n%s\nwant lines\n%s", out, wantTree)
	}
	out, _, _ = nsprof(t, nil, "report", "--bottom-up", "--depth", "1", path)
	if !strings.Contains(out, "  50.0%    0.0%  hot [server]\n") || strings.Contains(out, "    work") {
		t.Errorf("--bottom-up --depth 1:\n%s", out)
	}

	out, _, _ = nsprof(t, nil, "report", "--by", "process", path)
	i, j := strings.Index(out, "== pid 10 server [unknown], 4 samples (66.7%) =="), strings.Index(out, "== pid 20 client [unknown], 2 samples (33.3%) ==")
	if i < 0 || j < i {
		t.Errorf("--by process:\n%s", out)
	}
}

func TestReportJSON(t *testing.T) {
	path, _ := writeReportCapture(t, t.TempDir())
	out, stderr, status := nsprof(t, nil, "report", "--json", "--by", "process", path)
	if status != 0 {
		t.Fatalf("status %d: %s", status, stderr)
	}
	var doc struct {
		Schema  string `json:"schema"`
		Capture struct {
			File      string         `json:"file"`
			Samples   int            `json:"samples"`
			Processes int            `json:"processes"`
			Lost      *int64         `json:"lost_samples"`
			Symbols   map[string]int `json:"symbols"`
		} `json:"capture"`
		Selected int    `json:"selected"`
		View     string `json:"view"`
		GroupBy  string `json:"group_by"`
		Groups   []struct {
			Key       string `json:"key"`
			PID       int32  `json:"pid"`
			Comm      string `json:"comm"`
			Samples   int    `json:"samples"`
			Functions []struct {
				Function     string  `json:"function"`
				DSO          string  `json:"dso"`
				Self         int     `json:"self"`
				Total        int     `json:"total"`
				SelfPercent  float64 `json:"self_percent"`
				TotalPercent float64 `json:"total_percent"`
			} `json:"functions"`
		} `json:"groups"`
	}
	dec := json.NewDecoder(strings.NewReader(out))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&doc); err == nil {
		t.Log("schema has no fields beyond the test's view") // fine either way
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if doc.Schema != nsreport.Schema || doc.Capture.File != path || doc.Capture.Samples != 6 || doc.Capture.Processes != 2 ||
		doc.Capture.Lost != nil || doc.Capture.Symbols["bundle"] == 0 || doc.Selected != 6 || doc.View != "top" || doc.GroupBy != "process" {
		t.Errorf("document head: %+v", doc)
	}
	if len(doc.Groups) != 2 || doc.Groups[0].PID != 10 || doc.Groups[0].Comm != "server" || doc.Groups[0].Samples != 4 {
		t.Fatalf("groups: %+v", doc.Groups)
	}
	f := doc.Groups[0].Functions
	if len(f) != 3 || f[0].Function != "hot" || f[0].Self != 3 || f[0].Total != 3 || f[0].SelfPercent != 75 || f[0].DSO != "server" {
		t.Errorf("pid 10 functions: %+v", f)
	}

	out, _, _ = nsprof(t, nil, "report", "--json", "--tree", path)
	var tree struct {
		Groups []struct {
			Tree struct {
				Total    int `json:"total"`
				Children []struct {
					Function string `json:"function"`
					Total    int    `json:"total"`
					Children []struct {
						Function string `json:"function"`
						Total    int    `json:"total"`
					} `json:"children"`
				} `json:"children"`
			} `json:"tree"`
		} `json:"groups"`
	}
	if err := json.Unmarshal([]byte(out), &tree); err != nil {
		t.Fatal(err)
	}
	root := tree.Groups[0].Tree
	if root.Total != 6 || len(root.Children) != 2 || root.Children[0].Function != "main" || len(root.Children[0].Children) != 1 ||
		root.Children[0].Children[0].Function != "work" || root.Children[0].Children[0].Total != 4 {
		t.Errorf("tree: %+v", root)
	}
}

// TestReportDamaged truncates the capture inside its last sample: the
// report covers the samples before the damage and names the offset, with
// status 1, or 0 with --partial.
func TestReportDamaged(t *testing.T) {
	dir := t.TempDir()
	path, _ := writeReportCapture(t, dir)
	r, err := capture.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	var lastSample int64
	for {
		off := r.Offset()
		f, err := r.Next()
		if err != nil {
			break
		}
		if _, ok := f.(*capture.Sample); ok {
			lastSample = off
		}
	}
	r.Close()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	cut := filepath.Join(dir, "cut.syscap")
	if err := os.WriteFile(cut, data[:lastSample+20], 0o644); err != nil {
		t.Fatal(err)
	}
	// Status 1 so that scripts notice, unless --partial accepts the damage.
	out, stderr, status := nsprof(t, nil, "report", cut)
	if status != 1 || !strings.HasPrefix(stderr, "nsprof: "+cut+": capture: truncated frame header") || !strings.Contains(stderr, "at offset ") ||
		!strings.Contains(stderr, "the 5 samples before the damage (--partial accepts") {
		t.Errorf("status %d, stderr: %q", status, stderr)
	}
	partial, stderr, status := nsprof(t, nil, "report", "--partial", cut)
	if status != 0 || partial != out || !strings.Contains(stderr, "warning: "+cut+": capture: truncated frame header") || !strings.Contains(stderr, "the 5 samples before the damage\n") {
		t.Errorf("--partial: status %d, stderr: %q", status, stderr)
	}
	// The bundle came after the damage: the addresses are unnamed, one
	// function per file, or with --addresses per file offset.
	if !strings.Contains(out, ", 5 samples of 2 processes, 2 processes in the capture") || !regexp.MustCompile(`\s1\s+\[unknown in client\]\s+client\n`).MatchString(out) || !regexp.MustCompile(`\s4\s+\[unknown in server\]\s+server\n`).MatchString(out) {
		t.Errorf("report of the damaged capture:\n%s", out)
	}
	byAddr, _, _ := nsprof(t, nil, "report", "--partial", "--addresses", cut)
	if tableRow(t, byAddr, "client+0x310")[2] != "1" || tableRow(t, byAddr, "server+0x210")[2] != "3" || strings.Contains(byAddr, "[unknown in") {
		t.Errorf("report --addresses of the damaged capture:\n%s", byAddr)
	}
	// export takes the same choice.
	folded, _, _ := nsprof(t, nil, "export", "--partial", "--format", "folded", cut)
	foldedByAddr, _, _ := nsprof(t, nil, "export", "--partial", "--format", "folded", "--addresses", cut)
	if !strings.Contains(folded, "[unknown in server]") || strings.Contains(folded, "+0x") ||
		!strings.Contains(foldedByAddr, "server+0x210") || strings.Contains(foldedByAddr, "[unknown in") {
		t.Errorf("export --format folded of the damaged capture:\n%s\nwith --addresses:\n%s", folded, foldedByAddr)
	}
	out, _, _ = nsprof(t, nil, "report", "--json", cut)
	if !strings.Contains(out, `"damage": "`) {
		t.Errorf("--json does not report the damage:\n%s", out)
	}
}

func TestReportErrors(t *testing.T) {
	path, _ := writeReportCapture(t, t.TempDir())
	for _, tc := range []struct {
		args   []string
		status int
		msg    string
	}{
		{[]string{"report", "--by", "cpu", path}, 2, "--by: unknown grouping"},
		{[]string{"report", "--tree", "--bottom-up", path}, 2, "cannot be combined"},
		{[]string{"report", "--since", "soon", path}, 2, "--since: \"soon\" is neither"},
		{[]string{"report", "--since", "2", "--until", "1", path}, 2, "--until must be after --since"},
		{[]string{"report", "--comm", "(", path}, 2, "--comm: "},
		{[]string{"report", "--sort", "name", path}, 2, "--sort"},
		{[]string{"report", path, path}, 2, "accepts at most 1 arg"},
		{[]string{"report", filepath.Join(t.TempDir(), "none.syscap")}, 1, "no such file"},
		{[]string{"report", "/etc/passwd"}, 1, "/etc/passwd: capture: bad magic"},
		{[]string{"report", "--diff-base", path, "--tree", path}, 2, "--diff-base compares function tables"},
		{[]string{"report", "--diff-base", path, "--by", "process", path}, 2, "--diff-base compares function tables"},
		{[]string{"report", "--diff-base", "/etc/passwd", path}, 1, "/etc/passwd: capture: bad magic"},
		{[]string{"report", "--lines", "--tree", path}, 2, "--lines makes the function table's rows source lines"},
		{[]string{"report", "--lines", "--marks", path}, 2, "--lines makes the function table's rows source lines"},
		{[]string{"report", "--lines", "--diff-base", path, path}, 2, "--lines makes the function table's rows source lines"},
	} {
		_, stderr, status := nsprof(t, nil, tc.args...)
		if status != tc.status || !strings.Contains(stderr, tc.msg) {
			t.Errorf("%v: status %d, stderr %q; want %d and %q", tc.args, status, stderr, tc.status, tc.msg)
		}
	}
	// Without a file name, report reads capture.syscap in the working
	// directory.
	dir := t.TempDir()
	data, _ := os.ReadFile(path)
	os.WriteFile(filepath.Join(dir, "capture.syscap"), data, 0o644)
	t.Chdir(dir)
	if out, stderr, status := nsprof(t, nil, "report"); status != 0 || !strings.HasPrefix(out, "capture.syscap: ") {
		t.Errorf("default file: status %d, %q %q", status, out, stderr)
	}
}

// TestReportDiffBase compares the report capture with itself (every
// delta 0) and with a capture of other stacks (testcaptures' CPU), as
// text and JSON, the same selection applying to both.
func TestReportDiffBase(t *testing.T) {
	dir := t.TempDir()
	path, _ := writeReportCapture(t, dir)
	other := filepath.Join(dir, "other.syscap")
	if err := os.WriteFile(other, testcaptures.CPU(t), 0o644); err != nil {
		t.Fatal(err)
	}
	out, stderr, status := nsprof(t, nil, "report", "--diff-base", path, path)
	if status != 0 {
		t.Fatalf("status %d: %s", status, stderr)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3+5 || !strings.HasPrefix(lines[1], "base "+path+": ") {
		t.Fatalf("against itself:\n%s", out)
	}
	for _, l := range lines[3:] {
		if f := strings.Fields(l); len(f) < 7 || f[2] != "0.0" || f[5] != "0.0" {
			t.Errorf("against itself, a change: %q", l)
		}
	}
	out, stderr, status = nsprof(t, nil, "report", "--json", "--pid", "10", "--diff-base", other, path)
	if status != 0 {
		t.Fatalf("status %d: %s", status, stderr)
	}
	var doc struct {
		Selected     int `json:"selected"`
		BaseSelected int `json:"base_selected"`
		Diff         []struct {
			Function    string  `json:"function"`
			BaseSelf    int     `json:"base_self"`
			Self        int     `json:"self"`
			SelfDelta   float64 `json:"self_delta"`
			SelfPercent float64 `json:"self_percent"`
		} `json:"diff"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	// pid 10 of each: 4 samples here (hot 3, work 1), 10 in the other
	// (hot 5, k_read 3, work 2).
	if doc.Selected != 4 || doc.BaseSelected != 10 {
		t.Errorf("selected %d and %d in the base, want 4 and 10", doc.Selected, doc.BaseSelected)
	}
	got := map[string]string{}
	for _, d := range doc.Diff {
		got[d.Function] = fmt.Sprintf("%d→%d %+.1f", d.BaseSelf, d.Self, d.SelfDelta)
	}
	for fn, want := range map[string]string{"hot": "5→3 +25.0", "work": "2→1 +5.0", "k_read": "3→0 -30.0"} {
		if got[fn] != want {
			t.Errorf("%s: %s, want %s (all: %v)", fn, got[fn], want, got)
		}
	}
	if doc.Diff[0].Function != "k_read" {
		t.Errorf("the largest change first: %s", doc.Diff[0].Function)
	}
}
