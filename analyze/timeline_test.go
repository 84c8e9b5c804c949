package analyze

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"testing"
	"time"

	"nsprof/capture"
)

// markDurations are the durations in ms of the marks of the timeline
// capture, by group and name.
var markDurations = map[[2]string][]int64{
	{"gtk", "frame"}:   {4, 1, 3, 2},                                                                // even count
	{"gtk", "layout"}:  {7},                                                                         // one
	{"app", "request"}: {21, 1, 20, 2, 19, 3, 18, 4, 17, 5, 16, 6, 15, 7, 14, 8, 13, 9, 12, 10, 11}, // 1..21
}

// writeTimelineCapture writes marks with known durations, two counters,
// logs, and processes that fork and exit: pid 300 (comm "worker", in a
// podman container with ns pid 7) forks pid 301 (also "worker"), which
// exits at 6 ms.
func writeTimelineCapture(t testing.TB) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := capture.NewWriterWithOptions(&buf, capture.WriterOptions{
		StartTime: testStart, EndTime: testStart + 10e6,
		CaptureTime: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
		Clock:       func() int64 { return math.MinInt64 },
	})
	if err != nil {
		t.Fatal(err)
	}
	h := func(pid int32, ms int64) capture.FrameHeader {
		return capture.FrameHeader{CPU: int16(pid % 2), PID: pid, Time: testStart + ms*1e6}
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(w.WriteFrame(&capture.Process{FrameHeader: h(300, 0), Cmdline: "/usr/bin/worker -j2"}))
	must(w.WriteFrame(&capture.Fork{FrameHeader: h(300, 2), ChildPID: 301}))
	must(w.WriteFrame(&capture.Process{FrameHeader: h(301, 2), Cmdline: "/usr/bin/worker --child"}))
	for _, pid := range []int32{300, 301, 301} {
		must(w.WriteFrame(&capture.Sample{FrameHeader: h(pid, 3), TID: pid, Addrs: []uint64{capture.ContextUser, 0x1234}}))
	}
	must(w.WriteFrame(&capture.Exit{FrameHeader: h(301, 6)}))
	for k, ds := range markDurations {
		for i, d := range ds {
			must(w.AddMark(testStart+int64(i)*1000, 300, d*1e6, k[0], k[1], "m"))
		}
	}
	must(w.DefineCounters(h(-1, 0), []capture.Counter{
		{Category: "CPU Percent", Name: "Total", ID: 1, Type: capture.CounterDouble, Value: capture.DoubleValue(10)},
		{Category: "Sampler", Name: "Lost Samples", ID: 2, Type: capture.CounterInt64},
	}))
	for i, v := range []float64{20, 30, 60} {
		must(w.SetCounters(h(-1, int64(i+1)*3), []capture.CounterUpdate{{ID: 1, Value: capture.DoubleValue(v)}}))
	}
	must(w.SetCounters(h(-1, 9), []capture.CounterUpdate{{ID: 2, Value: capture.IntValue(4)}}))
	must(w.AddLog(testStart+5e6, 300, capture.LogWarning, "Gtk", "low on <memory>"))
	must(w.AddLog(testStart+7e6, 301, capture.LogInfo, "app", "done"))
	var procs bytes.Buffer
	for _, v := range []any{
		capture.ProcessInfo{Kind: "process", PID: 300, NSpid: []int{300, 7}, Comm: "worker", Container: &capture.ContainerInfo{Kind: "podman", ID: "0123456789abcdef", Name: "build"}},
		capture.ProcessInfo{Kind: "process", PID: 301, PPID: 300, NSpid: []int{301, 8}, Comm: "worker"},
	} {
		b, _ := json.Marshal(v)
		procs.Write(append(b, '\n'))
	}
	must(w.AddFileBytes(h(-1, 9), capture.ProcessFile, procs.Bytes()))
	must(w.Close())
	return buf.Bytes()
}

func TestMarkStats(t *testing.T) {
	tl, err := LoadTimeline(bytes.NewReader(writeTimelineCapture(t)))
	if err != nil {
		t.Fatal(err)
	}
	const ms = 1e6
	want := []MarkStat{
		{Group: "app", Name: "request", Count: 21, Min: 1 * ms, Max: 21 * ms, Total: 231 * ms, Mean: 11 * ms, Median: 11 * ms, P95: 20 * ms},
		{Group: "gtk", Name: "frame", Count: 4, Min: 1 * ms, Max: 4 * ms, Total: 10 * ms, Mean: 2.5 * ms, Median: 2.5 * ms, P95: 4 * ms},
		{Group: "gtk", Name: "layout", Count: 1, Min: 7 * ms, Max: 7 * ms, Total: 7 * ms, Mean: 7 * ms, Median: 7 * ms, P95: 7 * ms},
	}
	got := MarkStats(tl.Marks)
	if len(got) != len(want) {
		t.Fatalf("stats %+v", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("stat %d: %+v, want %+v", i, got[i], want[i])
		}
	}
}

func TestMedianPercentile(t *testing.T) {
	for _, tc := range []struct {
		name   string
		v      []int64
		median float64
		p95    int64
		p50    int64
	}{
		{"none", nil, 0, 0, 0},
		{"one", []int64{5}, 5, 5, 5},
		{"two", []int64{1, 2}, 1.5, 2, 1},
		{"even", []int64{10, 20, 30, 40}, 25, 40, 20},
		{"odd", []int64{1, 2, 100}, 2, 100, 2},
		{"large", []int64{1 << 51, 1<<51 + 1}, float64(1<<51) + 0.5, 1<<51 + 1, 1 << 51},
		{"twenty", []int64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20}, 10.5, 19, 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if m := Median(tc.v); m != tc.median {
				t.Errorf("median %v, want %v", m, tc.median)
			}
			if p := Percentile(tc.v, 95); p != tc.p95 {
				t.Errorf("p95 %v, want %v", p, tc.p95)
			}
			if p := Percentile(tc.v, 50); p != tc.p50 {
				t.Errorf("p50 %v, want %v", p, tc.p50)
			}
		})
	}
}

func TestTimeline(t *testing.T) {
	tl, err := LoadTimeline(bytes.NewReader(writeTimelineCapture(t)))
	if err != nil {
		t.Fatal(err)
	}
	if tl.Samples != 3 || len(tl.CPUs) != 2 || tl.Lost != 4 || !tl.HasLost {
		t.Errorf("samples %d, cpus %v, lost %d %t", tl.Samples, tl.CPUs, tl.Lost, tl.HasLost)
	}
	if d := tl.Duration(); d != 10e6 {
		t.Errorf("duration %d", d)
	}
	if st := tl.Frames[capture.TypeMark]; st.Count != 26 || st.Bytes == 0 {
		t.Errorf("marks %+v", st)
	}
	if st := tl.Frames[capture.TypeSample]; st.Count != 3 {
		t.Errorf("samples %+v", st)
	}
	if len(tl.Processes) != 2 {
		t.Fatalf("processes %+v", tl.Processes)
	}
	p, c := tl.Processes[0], tl.Processes[1]
	if p.PID != 300 || p.NSPID != 7 || p.Comm != "worker" || p.Cmdline != "/usr/bin/worker -j2" || p.Container.Label() != "podman:build (0123456789ab)" ||
		p.Start != testStart || p.End != testStart+10e6 || p.Exited || p.Samples != 1 || p.Threads != 1 {
		t.Errorf("pid 300: %+v", p)
	}
	if c.PID != 301 || c.PPID != 300 || c.NSPID != 8 || c.Start != testStart+2e6 || c.End != testStart+6e6 || !c.Exited || c.Samples != 2 {
		t.Errorf("pid 301: %+v", c)
	}
	if len(tl.Logs) != 2 || tl.Logs[0].Message != "low on <memory>" || tl.Logs[1].Domain != "app" {
		t.Errorf("logs %+v", tl.Logs)
	}
	if len(tl.Counters) != 2 {
		t.Fatalf("counters %+v", tl.Counters)
	}
	cpu := tl.Counters[0]
	s := cpu.Stats(tl.Start, tl.End+1)
	// The defined 10 is a placeholder: the updates are the values.
	if s.Count != 3 || s.Min != 20 || s.Max != 60 || s.Mean != 110.0/3 || s.Last != 60 {
		t.Errorf("cpu stats %+v", s)
	}
	// Nothing until 3 ms, 20 until 6, 30 until 9, then 60: ten 1-ms bars.
	if sp := cpu.Sparkline(tl.Start, tl.End, 10); sp != "   ▁▁▁▂▂▂█" {
		t.Errorf("sparkline %q", sp)
	}
	if sp := tl.Counters[1].Sparkline(tl.Start, tl.End, 4); sp != "   ▁" {
		t.Errorf("lost sparkline %q", sp)
	}
	if len(tl.Files) != 1 || tl.Files[0].Path != capture.ProcessFile {
		t.Errorf("files %+v", tl.Files)
	}
}

// TestGroupCommMerges loads the timeline capture's samples: both worker
// processes merge into one comm group.
func TestGroupCommMerges(t *testing.T) {
	p, err := Load(bytes.NewReader(writeTimelineCapture(t)), LoadOptions{NoHostFiles: true})
	if err != nil {
		t.Fatal(err)
	}
	groups := p.Group(p.Samples, GroupComm)
	if len(groups) != 1 || groups[0].Key != "worker" || len(groups[0].Samples) != 3 || groups[0].Container != "podman:build (0123456789ab)" {
		t.Errorf("groups %+v", groups)
	}
	if groups := p.Group(p.Samples, GroupProcess); len(groups) != 2 {
		t.Errorf("%d process groups", len(groups))
	}
}

// TestTimelineDamaged cuts the capture in the middle: the timeline of the
// frames before the cut comes with an error.
func TestTimelineDamaged(t *testing.T) {
	data := writeTimelineCapture(t)
	tl, err := LoadTimeline(bytes.NewReader(data[:len(data)/2+3]))
	if err == nil || tl == nil {
		t.Fatalf("timeline %v, err %v", tl, err)
	}
	if _, err := LoadTimeline(bytes.NewReader(data[:100])); err == nil {
		t.Error("no error for a cut header")
	}
}

// FuzzLoadTimeline checks that LoadTimeline never panics and returns a
// timeline unless the header is unreadable.
func FuzzLoadTimeline(f *testing.F) {
	data := writeTimelineCapture(f)
	f.Add(data)
	f.Add(data[:300])
	f.Fuzz(func(t *testing.T, b []byte) {
		tl, err := LoadTimeline(bytes.NewReader(b))
		if tl == nil && err == nil {
			t.Fatal("nil timeline without an error")
		}
		if tl != nil {
			MarkStats(tl.Marks)
			for _, c := range tl.Counters {
				c.Stats(tl.Start, tl.End)
				c.Sparkline(tl.Start, tl.End, 20)
			}
		}
	})
}

// Sysprof's format writes a FORK frame for a new thread as for a new
// process: a forked task sampled as a thread of another process, or named
// by nsprof's thread lines, is that process's thread, not a process.
func TestTimelineThreadsAreNotProcesses(t *testing.T) {
	var buf bytes.Buffer
	w, err := capture.NewWriterWithOptions(&buf, capture.WriterOptions{StartTime: testStart, EndTime: testStart + 10e6,
		Clock: func() int64 { return math.MinInt64 }})
	if err != nil {
		t.Fatal(err)
	}
	h := func(pid int32, ms int64) capture.FrameHeader {
		return capture.FrameHeader{CPU: 0, PID: pid, Time: testStart + ms*1e6}
	}
	frames := []capture.Frame{
		&capture.Process{FrameHeader: h(10, 0), Cmdline: "/bin/server"},
		&capture.Fork{FrameHeader: h(10, 1), ChildPID: 11}, // a thread, sampled
		&capture.Fork{FrameHeader: h(10, 1), ChildPID: 12}, // a thread, named by the process file
		&capture.Fork{FrameHeader: h(10, 1), ChildPID: 13}, // a child process
		&capture.Process{FrameHeader: h(13, 2), Cmdline: "/bin/server --child"},
		&capture.Sample{FrameHeader: h(10, 3), TID: 11, Addrs: []uint64{capture.ContextUser, 0x1234}},
		&capture.Sample{FrameHeader: h(13, 3), TID: 13, Addrs: []uint64{capture.ContextUser, 0x1234}},
		&capture.Exit{FrameHeader: h(13, 5)},
	}
	for _, f := range frames {
		if err := w.WriteFrame(f); err != nil {
			t.Fatal(err)
		}
	}
	lines := fmt.Sprintf(`{"kind":"thread","time":%d,"tid":12,"pid":10}
{"kind":"thread","time":%d,"tid":12,"pid":10,"comm":"io-worker"}
{"kind":"thread","time":%d,"tid":12,"pid":10,"exited":true}
`, testStart+1e6, testStart+2e6, testStart+4e6)
	if err := w.AddFileBytes(h(-1, 6), capture.ProcessFile, []byte(lines)); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	tl, err := LoadTimeline(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if len(tl.Processes) != 2 || tl.Processes[0].PID != 10 || tl.Processes[1].PID != 13 {
		for _, p := range tl.Processes {
			t.Logf("process %+v", *p)
		}
		t.Fatalf("%d processes, want 10 and 13", len(tl.Processes))
	}
	if n := tl.ThreadCount(); n != 4 {
		t.Errorf("%d threads, want 4", n)
	}
	var got []ThreadSpan
	for _, th := range tl.Processes[0].Tasks {
		got = append(got, *th)
	}
	want := []ThreadSpan{
		{TID: 11, Start: testStart + 1e6, End: testStart + 10e6, Samples: 1},
		{TID: 12, Comm: "io-worker", Start: testStart + 1e6, End: testStart + 4e6, Exited: true},
	}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("threads of 10:\n%+v\nwant\n%+v", got, want)
	}
}
