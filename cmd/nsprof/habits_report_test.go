package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"nsprof/capture"
	"nsprof/internal/testcaptures"
)

// sysprofWithStrayMark writes the capture Sysprof 3.46's sysprof-cli
// recorded, with one GTK mark appended that is stamped at time t (GTK
// stamps a mark 0 when it ends one it never began), and returns its path
// and the path of the capture as recorded.
func sysprofWithStrayMark(t *testing.T, at int64) (stray, clean string) {
	t.Helper()
	data := testcaptures.Sysprof(t)
	var buf bytes.Buffer
	w, err := capture.NewWriter(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.AddMark(at, 1234, 8_000_000, "gtk", "frameclock cycle", ""); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	clean, stray = filepath.Join(dir, "clean.syscap"), filepath.Join(dir, "stray.syscap")
	if err := os.WriteFile(clean, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(stray, append(data, buf.Bytes()[capture.HeaderSize:]...), 0o644); err != nil {
		t.Fatal(err)
	}
	return stray, clean
}

// TestReportStrayTimestamp: a frame stamped before the capture's start
// (time 0, or a small time from another clock) does not stretch the
// capture's duration in any view; it is counted and reported. A
// sysprof-cli capture with one such GTK mark made report print 809 s for
// an 8 s capture.
func TestReportStrayTimestamp(t *testing.T) {
	for _, at := range []int64{0, 1000} {
		stray, clean := sysprofWithStrayMark(t, at)
		for _, view := range [][]string{{"report"}, {"report", "--summary"}, {"report", "--marks"}} {
			want, _, _ := nsprof(t, nil, append(view, clean)...)
			got, stderr, status := nsprof(t, nil, append(view, stray)...)
			if status != 0 {
				t.Fatalf("%v at %d: status %d, %s", view, at, status, stderr)
			}
			wantHead, gotHead := strings.SplitN(want, "\n", 2)[0], strings.SplitN(got, "\n", 2)[0]
			wantHead = strings.Replace(wantHead, "clean.syscap", "stray.syscap", 1)
			if gotHead != wantHead {
				t.Errorf("%v, mark at %d: %q, want the capture's own %q", view, at, gotHead, wantHead)
			}
			if len(view) > 1 && !strings.Contains(stderr, "1 frames stamped before the capture's start") {
				t.Errorf("%v, mark at %d: the stray frame is not reported: stderr %q", view, at, stderr)
			}
		}
	}
}

// TestReportProcessCountsAgree: the sample views and the timeline views
// count the processes of a capture the same way, and say what they count.
// In a capture sysprof-cli 3.46 recorded of a GTK 4 program, the threads
// GTK starts appear as FORK frames only: --summary counted them as
// processes (82) where report did not (75).
func TestReportProcessCountsAgree(t *testing.T) {
	data := testcaptures.SysprofGTK(t)
	path := filepath.Join(t.TempDir(), "gtk.syscap")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	type counts struct {
		Capture struct {
			Processes int `json:"processes"`
			Sampled   int `json:"sampled_processes"`
		} `json:"capture"`
	}
	var got []counts
	for _, view := range [][]string{{"report", "--json"}, {"report", "--summary", "--json"}, {"report", "--processes", "--json"}} {
		out, stderr, status := nsprof(t, nil, append(view, path)...)
		if status != 0 {
			t.Fatalf("%v: status %d: %s", view, status, stderr)
		}
		var c counts
		if err := json.Unmarshal([]byte(out), &c); err != nil {
			t.Fatalf("%v: %v", view, err)
		}
		got = append(got, c)
	}
	for i, c := range got[1:] {
		if c != got[0] {
			t.Errorf("view %d counts %+v processes, the sample view %+v", i+1, c.Capture, got[0].Capture)
		}
	}
	if got[0].Capture.Sampled == 0 || got[0].Capture.Sampled >= got[0].Capture.Processes {
		t.Errorf("%+v: want fewer processes with samples than in the capture", got[0].Capture)
	}
	top, _, _ := nsprof(t, nil, "report", path)
	sum, _, _ := nsprof(t, nil, "report", "--summary", path)
	want := fmt.Sprintf("%d processes in the capture", got[0].Capture.Processes)
	if first := strings.SplitN(top, "\n", 2)[0]; !strings.Contains(first, want) || !strings.Contains(sum, want) {
		t.Errorf("report's first line %q or --summary's %q does not say %q", first, strings.SplitN(sum, "\n", 2)[0], want)
	}
	if line := fmt.Sprintf("processes    %d (%d sampled)", got[0].Capture.Processes, got[0].Capture.Sampled); !strings.Contains(sum, line) {
		t.Errorf("--summary lacks %q:\n%s", line, sum)
	}
}

// TestReportPerfFlags: report and export take the capture with -i, as
// perf report does; report takes --stdio (text, the default) and -g (the
// call tree).
func TestReportPerfFlags(t *testing.T) {
	path := writeTestCapture(t, t.TempDir(), "p.syscap")
	for _, c := range []struct{ got, want []string }{
		{[]string{"report", "-i", path, "--stdio", "-g"}, []string{"report", "--tree", path}},
		{[]string{"report", "--stdio", "-i", path}, []string{"report", path}},
		{[]string{"export", "-i", path, "--format", "folded"}, []string{"export", path, "--format", "folded"}},
	} {
		want, _, _ := nsprof(t, nil, c.want...)
		got, stderr, status := nsprof(t, nil, c.got...)
		if status != 0 || got != want {
			t.Errorf("%v: status %d, stderr %q, output:\n%s\nwant that of %v:\n%s", c.got, status, stderr, got, c.want, want)
		}
	}
	if _, stderr, status := nsprof(t, nil, "report", "-i", path, path); status != 2 || !strings.Contains(stderr, "not both") {
		t.Errorf("report -i FILE FILE: status %d, stderr %q", status, stderr)
	}
	// perf's --sort keys point at --by, which groups as they do.
	for keys, by := range map[string]string{"dso": "--by dso", "comm,dso,sym": "--by comm", "pid": "--by process", "sym": ""} {
		_, stderr, status := nsprof(t, nil, "report", "--sort", keys, path)
		if status != 2 || by != "" && !strings.Contains(stderr, "is "+by+" here") || by == "" && strings.Contains(stderr, "--by") {
			t.Errorf("report --sort %s: status %d, stderr %q; want a usage error naming %q", keys, status, stderr, by)
		}
	}
}

// TestReportProcessCountsForkedChild: a task named only by a FORK frame is
// a thread of the forking process; one that also has an EXIT frame (a
// child that forked, never exec'd, and exited) is a process. Every view
// counts both the same.
func TestReportProcessCountsForkedChild(t *testing.T) {
	path := filepath.Join(t.TempDir(), "fork.syscap")
	w, err := capture.CreateWithOptions(path, capture.WriterOptions{StartTime: testStart})
	if err != nil {
		t.Fatal(err)
	}
	h := func(pid int32, ms int64) capture.FrameHeader {
		return capture.FrameHeader{CPU: 0, PID: pid, Time: testStart + ms*1e6}
	}
	for _, f := range []capture.Frame{
		&capture.Process{FrameHeader: h(10, 0), Cmdline: "ten"},
		&capture.Fork{FrameHeader: h(10, 1), ChildPID: 11}, // a thread
		&capture.Fork{FrameHeader: h(10, 2), ChildPID: 12}, // a process
		&capture.Sample{FrameHeader: h(10, 3), TID: 10, Addrs: []uint64{capture.ContextUser, 0x401000}},
		&capture.Exit{FrameHeader: h(12, 4)},
	} {
		if err := w.WriteFrame(f); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	want := "1 samples of 1 processes, 2 processes in the capture"
	for _, view := range [][]string{{"report"}, {"report", "--summary"}, {"report", "--processes"}} {
		out, stderr, status := nsprof(t, nil, append(view, path)...)
		if first := strings.SplitN(out, "\n", 2)[0]; status != 0 || !strings.Contains(first, want) {
			t.Errorf("%v: status %d %s, first line %q, want %q", view, status, stderr, first, want)
		}
		if view[len(view)-1] == "--summary" && !strings.Contains(out, "threads      3 (1 sampled)") {
			t.Errorf("--summary: want the two threads of process 10 and the one of 12:\n%s", out)
		}
	}
}
