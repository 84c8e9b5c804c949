package main

import (
	"encoding/json"
	"math"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"nsprof/analyze"
	"nsprof/capture"
	nsreport "nsprof/report"
)

// writeTimelineCapture writes marks with known durations (in µs: frame
// 1, 2, 3, 4 and 10; "load" once, 250), a CPU counter, logs, and two
// processes, the second forked by the first and exiting at 6 ms. The
// capture ends with the last mark, at 8.25 ms.
func writeTimelineCapture(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "tl.syscap")
	w, err := capture.CreateWithOptions(path, capture.WriterOptions{
		StartTime: testStart, EndTime: testStart + 1e7,
		CaptureTime: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
		Clock:       func() int64 { return math.MinInt64 },
	})
	if err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	h := func(pid int32, ms int64) capture.FrameHeader {
		return capture.FrameHeader{CPU: 0, PID: pid, Time: testStart + ms*1e6}
	}
	must(w.WriteFrame(&capture.Process{FrameHeader: h(40, 0), Cmdline: "/usr/bin/gui --x"}))
	must(w.WriteFrame(&capture.Fork{FrameHeader: h(40, 2), ChildPID: 41}))
	must(w.WriteFrame(&capture.Process{FrameHeader: h(41, 2), Cmdline: "/usr/bin/helper\nwith newline"}))
	must(w.WriteFrame(&capture.Exit{FrameHeader: h(41, 6)}))
	for i, us := range []int64{4, 1, 10, 3, 2} {
		must(w.AddMark(testStart+int64(i+1)*1e6, 40, us*1000, "gtk", "frame", ""))
	}
	must(w.AddMark(testStart+8e6, 41, 250_000, "app", "load", "config"))
	must(w.DefineCounters(h(-1, 0), []capture.Counter{
		{Category: "CPU Percent", Name: "Total", ID: 1, Type: capture.CounterDouble, Value: capture.DoubleValue(0)},
		{Category: "Demo", Name: "Constant", ID: 2, Type: capture.CounterInt64, Value: capture.IntValue(7)},
	}))
	for i, v := range []float64{50, 100, 25} {
		must(w.SetCounters(h(-1, int64(i+1)*2), []capture.CounterUpdate{{ID: 1, Value: capture.DoubleValue(v)}}))
	}
	must(w.AddLog(testStart+3e6, 40, capture.LogWarning, "Gtk", "theme <missing>"))
	must(w.AddLog(testStart+7e6, 41, capture.LogDebug, "app", "line one\nline two"))
	must(w.Close())
	return path
}

func TestReportMarks(t *testing.T) {
	path := writeTimelineCapture(t)
	out, stderr, status := nsprof(t, nil, "report", "--marks", "--json", path)
	if status != 0 {
		t.Fatalf("status %d: %s", status, stderr)
	}
	var doc struct {
		Schema string             `json:"schema"`
		View   string             `json:"view"`
		Marks  []analyze.MarkStat `json:"marks"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	// frame: 1 2 3 4 10 µs: mean 4, median 3, p95 10.
	want := []analyze.MarkStat{
		{Group: "app", Name: "load", Count: 1, Min: 250000, Max: 250000, Total: 250000, Mean: 250000, Median: 250000, P95: 250000},
		{Group: "gtk", Name: "frame", Count: 5, Min: 1000, Max: 10000, Total: 20000, Mean: 4000, Median: 3000, P95: 10000},
	}
	if doc.Schema != nsreport.Schema || doc.View != "marks" || len(doc.Marks) != 2 || doc.Marks[0] != want[0] || doc.Marks[1] != want[1] {
		t.Errorf("marks %+v, want %+v", doc, want)
	}
	// Without the 10 µs mark (taken at 3 ms): an even count, median the
	// mean of the middle two.
	out, _, _ = nsprof(t, nil, "report", "--marks", "--pid", "40", "--until", "0.0025", path)
	if !strings.Contains(squeeze(out), "\ngtk:frame 2 1.000µs 4.000µs 2.500µs 2.500µs 4.000µs\n") || strings.Contains(out, "app:load") {
		t.Errorf("marks text:\n%s", out)
	}
	out, _, _ = nsprof(t, nil, "report", "--marks", "--since", "0.0025", path)
	if !strings.Contains(squeeze(out), "\ngtk:frame 3 2.000µs 10.000µs 5.000µs 3.000µs 10.000µs\n") {
		t.Errorf("marks text since 2.5 ms:\n%s", out)
	}
}

func TestReportTimelineViews(t *testing.T) {
	path := writeTimelineCapture(t)
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"--counters"}, []string{"CPU Percent / Total       3           25        58.33          100           ▃▃▃▃▃▃▃▃▃▃██████████▁▁▁▁▁▁▁▁▁▁▁", "Demo / Constant           1            7            7            7  ▁▁▁▁"}},
		{[]string{"--processes"}, []string{
			"     40       -       -   +0.000s   running        0       0  unknown              /usr/bin/gui --x",
			"     41       -      40   +0.002s   +0.006s        0       0  unknown              /usr/bin/helper\\nwith newline"}},
		{[]string{"--logs"}, []string{"+0.003000s WARNING       40  Gtk: theme <missing>", "+0.007000s DEBUG         41  app: line one\n    line two"}},
		{[]string{"--logs", "--pid", "41"}, []string{"app: line one"}},
		{[]string{"--summary"}, []string{"duration     0.008s", "samples      0 (lost: not recorded)", "MARK                   6", "processes    2"}},
	} {
		out, stderr, status := nsprof(t, nil, append(append([]string{"report"}, tc.args...), path)...)
		if status != 0 {
			t.Fatalf("%v: status %d: %s", tc.args, status, stderr)
		}
		for _, w := range tc.want {
			if !strings.Contains(out, w) {
				t.Errorf("%v: no %q in:\n%s", tc.args, w, out)
			}
		}
		if tc.args[0] == "--logs" && len(tc.args) > 1 && strings.Contains(out, "Gtk") {
			t.Errorf("--pid 41 shows pid 40's log:\n%s", out)
		}
	}
	for _, tf := range timelineFlags {
		view := tf.name
		out, stderr, status := nsprof(t, nil, "report", "--json", "--"+view, path)
		var doc map[string]any
		if status != 0 || json.Unmarshal([]byte(out), &doc) != nil || doc["view"] != view {
			t.Errorf("--%s --json: status %d %s\n%s", view, status, stderr, out)
		}
	}
	for _, tc := range []struct {
		args []string
		msg  string
	}{
		{[]string{"--marks", "--logs"}, "cannot be combined"},
		{[]string{"--marks", "--tree"}, "does not combine"},
		{[]string{"--counters", "--by", "process"}, "does not combine"},
		{[]string{"--processes", "--comm", "gui"}, "--pid, --container, --since and --until only"},
		{[]string{"--summary", "--focus", "main"}, "--pid, --container, --since and --until only"},
	} {
		if _, stderr, status := nsprof(t, nil, append(append([]string{"report"}, tc.args...), path)...); status != 2 || !strings.Contains(stderr, tc.msg) {
			t.Errorf("%v: status %d, stderr %q, want 2 and %q", tc.args, status, stderr, tc.msg)
		}
	}
	// --container selects the processes of the timeline views.
	all, _, _ := nsprof(t, nil, "report", "--processes", path)
	none, stderr, status := nsprof(t, nil, "report", "--processes", "--container", "no-such-container", path)
	if status != 0 || strings.Count(none, "\n") >= strings.Count(all, "\n") {
		t.Errorf("--processes --container: status %d %s, %d lines against %d without", status, stderr, strings.Count(none, "\n"), strings.Count(all, "\n"))
	}
}

// squeeze collapses the blanks of each line of s to single spaces.
func squeeze(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.Join(strings.Fields(l), " ")
	}
	return strings.Join(lines, "\n")
}
