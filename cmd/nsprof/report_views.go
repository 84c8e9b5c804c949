package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"nsprof/analyze"
	"nsprof/capture"
	"nsprof/internal/textsafe"
)

// timelineViews are the report views of a capture's timeline, in the
// order they are named in errors.
var timelineViews = []string{"marks", "counters", "processes", "logs", "summary"}

// timelineView returns the one timeline view set in views, or "", and
// rejects combinations with the sample views and with the filters that
// select samples only.
func timelineView(cmd *cobra.Command, views map[string]*bool, opts reportOptions) (string, error) {
	var set []string
	for _, name := range timelineViews {
		if *views[name] {
			set = append(set, "--"+name)
		}
	}
	switch {
	case len(set) == 0:
		return "", nil
	case len(set) > 1:
		return "", usagef(cmd, "%s cannot be combined: pick one view", strings.Join(set, " and "))
	case opts.Tree || opts.BottomUp || opts.Memory || opts.By != analyze.GroupNone:
		return "", usagef(cmd, "%s does not combine with --tree, --bottom-up, --memory or --by", set[0])
	}
	f := opts.View.Filter
	if len(f.TIDs) > 0 || f.Comm != "" || f.Container != "" || f.DSO != "" || opts.View.HideKernel || opts.View.Focus != "" || opts.View.FocusDSO != "" {
		return "", usagef(cmd, "%s selects by --pid, --since and --until only", set[0])
	}
	return strings.TrimPrefix(set[0], "--"), nil
}

// timeRange returns the capture-clock range [since, until) the filter
// selects on timeline t.
func timeRange(t *analyze.Timeline, f analyze.Filter) (since, until int64) {
	since, until = t.Start+int64(f.Since), math.MaxInt64
	if f.Until > 0 {
		until = t.Start + int64(f.Until)
	}
	return since, until
}

func wantPID(f analyze.Filter, pid int32) bool {
	return len(f.PIDs) == 0 || slices.Contains(f.PIDs, pid)
}

// reportTimeline runs the timeline views of `nsprof report`.
func reportTimeline(opts reportOptions, stdout, stderr io.Writer) error {
	t, loadErr := analyze.LoadTimelineFile(opts.Input)
	if t == nil {
		return loadErr
	}
	const done = "reported the frames before the damage"
	if loadErr != nil && opts.Partial {
		fmt.Fprintf(stderr, "nsprof: warning: %s; %s\n", textsafe.Escape(loadErr.Error()), done)
	}
	warn(stderr, opts.Input, t.Warnings)
	f := opts.View.Filter
	since, until := timeRange(t, f)
	var marks []capture.Mark
	for _, m := range t.Marks {
		if m.Time >= since && m.Time < until && wantPID(f, m.PID) {
			marks = append(marks, m)
		}
	}
	var logs []capture.Log
	for _, l := range t.Logs {
		if l.Time >= since && l.Time < until && wantPID(f, l.PID) {
			logs = append(logs, l)
		}
	}
	var procs []*analyze.ProcessSpan
	for _, p := range t.Processes {
		if p.End >= since && p.Start < until && wantPID(f, p.PID) {
			procs = append(procs, p)
		}
	}
	bw := bufio.NewWriterSize(stdout, 64*1024)
	var err error
	if opts.JSON {
		err = writeTimelineJSON(bw, t, opts, marks, logs, procs, loadErr)
	} else {
		fmt.Fprintf(bw, "%s: %s, %d samples, %d processes\n", textsafe.Escape(opts.Input), seconds3(t.Duration()), t.Samples, len(t.Processes))
		switch opts.Timeline {
		case "marks":
			writeMarksText(bw, analyze.MarkStats(marks), opts.Width)
			writeCollectorText(bw, t)
		case "counters":
			writeCountersText(bw, t, since, until, opts.Width)
		case "processes":
			writeProcessesText(bw, t, procs, opts.Width)
		case "logs":
			writeLogsText(bw, t, logs, opts.Width)
		case "summary":
			writeSummaryText(bw, t)
		}
	}
	if ferr := bw.Flush(); err == nil {
		err = ferr
	}
	if err == nil && loadErr != nil && !opts.Partial {
		err = damageError(loadErr, done)
	}
	return err
}

// fmtDuration prints ns with three decimals in the largest unit below it:
// "812ns", "3.250µs", "2.500ms", "1.200s".
func fmtDuration(ns float64) string {
	a := math.Abs(ns)
	switch {
	case a < 1e3:
		return fmt.Sprintf("%.0fns", ns)
	case a < 1e6:
		return fmt.Sprintf("%.3fµs", ns/1e3)
	case a < 1e9:
		return fmt.Sprintf("%.3fms", ns/1e6)
	}
	return fmt.Sprintf("%.3fs", ns/1e9)
}

func writeMarksText(w io.Writer, stats []analyze.MarkStat, width int) {
	if len(stats) == 0 {
		fmt.Fprintln(w, "no marks")
		return
	}
	nameW := len("Group:Name")
	names := make([]string, len(stats))
	for i, s := range stats {
		names[i] = textsafe.Escape(s.Group + ":" + s.Name)
		nameW = max(nameW, utf8.RuneCountInString(names[i]))
	}
	nameW = min(nameW, 48)
	fmt.Fprintf(w, "%-*s %7s %11s %11s %11s %11s %11s\n", nameW, "Group:Name", "Count", "Min", "Max", "Mean", "Median", "P95")
	for i, s := range stats {
		line := fmt.Sprintf("%-*s %7d %11s %11s %11s %11s %11s", nameW, truncate(names[i], nameW), s.Count,
			fmtDuration(float64(s.Min)), fmtDuration(float64(s.Max)), fmtDuration(s.Mean), fmtDuration(s.Median), fmtDuration(float64(s.P95)))
		fmt.Fprintln(w, truncate(line, width))
	}
}

// writeCollectorText says what the SYSPROF_CONTROL_FD rings took and
// lost, when the capture has the totals.
func writeCollectorText(w io.Writer, t *analyze.Timeline) {
	if c, ok := t.Collector(); ok {
		fmt.Fprintf(w, "\nSYSPROF_CONTROL_FD collectors: %s\n", collectorLine(c))
	}
}

// collectorLine is the one-line account of the collector totals.
func collectorLine(c analyze.CollectorStats) string {
	s := fmt.Sprintf("%d frames", c.Frames)
	if c.Full == 0 {
		return s + ", none lost (no ring was found full)"
	}
	return s + fmt.Sprintf("; rings found full: %d, for %s in all; about %d frames lost meanwhile (estimated: libsysprof-capture does not count what it drops)",
		c.Full, fmtDuration(float64(c.BlockedNs)), c.LostEstimate)
}

// sparkWidth is the width of the counters' sparklines.
const sparkWidth = 40

func writeCountersText(w io.Writer, t *analyze.Timeline, since, until int64, width int) {
	if len(t.Counters) == 0 {
		fmt.Fprintln(w, "no counters")
		return
	}
	nameW := len("Counter")
	names := make([]string, len(t.Counters))
	for i, c := range t.Counters {
		names[i] = textsafe.Escape(c.Category + " / " + c.Name)
		nameW = max(nameW, utf8.RuneCountInString(names[i]))
	}
	nameW = min(nameW, 40)
	from, to := max(since, t.Start), min(until, t.End)
	fmt.Fprintf(w, "%-*s %7s %12s %12s %12s  %s\n", nameW, "Counter", "Count", "Min", "Mean", "Max", "over "+seconds3(to-from))
	for i, c := range t.Counters {
		s := c.Stats(since, until)
		line := fmt.Sprintf("%-*s %7d %12s %12s %12s  %s", nameW, truncate(names[i], nameW), s.Count,
			fmtValue(s.Min), fmtValue(s.Mean), fmtValue(s.Max), c.Sparkline(from, to, sparkWidth))
		fmt.Fprintln(w, truncate(line, width))
	}
}

// fmtValue prints a counter value: integers as such, others with two
// decimals.
func fmtValue(v float64) string {
	if v == math.Trunc(v) && math.Abs(v) < 1e15 {
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.2f", v)
}

func writeProcessesText(w io.Writer, t *analyze.Timeline, procs []*analyze.ProcessSpan, width int) {
	if len(procs) == 0 {
		fmt.Fprintln(w, "no processes")
		return
	}
	fmt.Fprintf(w, "%7s %7s %7s %9s %9s %8s %7s  %-20s %s\n", "PID", "NS-PID", "PPID", "Start", "End", "Samples", "Threads", "Container", "Command")
	for _, p := range procs {
		end := "running"
		if p.Exited {
			end = fmt.Sprintf("+%.3fs", float64(p.End-t.Start)/1e9)
		}
		ns, pp := "-", "-"
		if p.NSPID != 0 {
			ns = fmt.Sprint(p.NSPID)
		}
		if p.PPID != 0 {
			pp = fmt.Sprint(p.PPID)
		}
		cmd := p.Cmdline
		if cmd == "" {
			cmd = "[" + p.Comm + "]"
		}
		if p.CmdlineRedacted {
			cmd += " [arguments not recorded]"
		}
		line := fmt.Sprintf("%7d %7s %7s %9s %9s %8d %7d  %-20s %s", p.PID, ns, pp, fmt.Sprintf("+%.3fs", float64(p.Start-t.Start)/1e9), end,
			p.Samples, p.Threads, truncate(textsafe.Escape(p.Container.Label()), 20), textsafe.Name(cmd, 0))
		fmt.Fprintln(w, truncate(line, width))
		for _, th := range p.Tasks {
			end := "running"
			if th.Exited {
				end = fmt.Sprintf("+%.3fs", float64(th.End-t.Start)/1e9)
			}
			name := th.Comm
			if name == "" {
				name = p.Comm
			}
			line := fmt.Sprintf("%7d %7s %7s %9s %9s %8d %7s  %-20s   thread %s", th.TID, "", "", fmt.Sprintf("+%.3fs", float64(th.Start-t.Start)/1e9), end,
				th.Samples, "", "", textsafe.Name(name, 0))
			fmt.Fprintln(w, truncate(line, width))
		}
	}
}

// jsonThreads returns the JSON of a process's threads; sec gives seconds
// from the capture start.
func jsonThreads(ts []*analyze.ThreadSpan, sec func(int64) float64) []jsonThread {
	var out []jsonThread
	for _, th := range ts {
		out = append(out, jsonThread{TID: th.TID, Comm: th.Comm, Start: sec(th.Start), End: sec(th.End), Exited: th.Exited, Samples: th.Samples})
	}
	return out
}

// severityName names a log severity (GLib's log level bits).
func severityName(s uint16) string {
	switch {
	case s&capture.LogError != 0:
		return "ERROR"
	case s&capture.LogCritical != 0:
		return "CRITICAL"
	case s&capture.LogWarning != 0:
		return "WARNING"
	case s&capture.LogMessage != 0:
		return "MESSAGE"
	case s&capture.LogInfo != 0:
		return "INFO"
	case s&capture.LogDebug != 0:
		return "DEBUG"
	}
	return fmt.Sprintf("LEVEL%d", s)
}

func writeLogsText(w io.Writer, t *analyze.Timeline, logs []capture.Log, width int) {
	if len(logs) == 0 {
		fmt.Fprintln(w, "no logs")
		return
	}
	for _, l := range logs {
		// A multi-line message keeps its lines, indented.
		msg := textsafe.Lines(strings.TrimRight(l.Message, "\n"), "\n    ")
		line := fmt.Sprintf("+%.6fs %-8s %7d  %s: %s", float64(l.Time-t.Start)/1e9, severityName(l.Severity), l.PID, textsafe.Name(l.Domain, 0), msg)
		if !strings.Contains(line, "\n") {
			line = truncate(line, width)
		}
		fmt.Fprintln(w, line)
	}
}

func writeSummaryText(w io.Writer, t *analyze.Timeline) {
	order := "little-endian"
	if t.Header.BigEndian {
		order = "big-endian"
	}
	fmt.Fprintf(w, "captured     %s (%s, format version %d)\n", textsafe.Name(t.Header.CaptureTime, 0), order, t.Header.Version)
	fmt.Fprintf(w, "duration     %s\n", seconds3(t.Duration()))
	cpus := fmt.Sprintf("%d sampled", len(t.CPUs))
	if len(t.CPUs) == 0 {
		cpus = "not recorded in the samples" // Sysprof writes cpu -1
	}
	if n := t.Metadata["n-cpu"]; n != "" {
		cpus += ", " + n + " online"
	}
	fmt.Fprintf(w, "CPUs         %s\n", cpus)
	lost := "not recorded"
	if t.HasLost {
		lost = fmt.Sprint(t.Lost)
	}
	fmt.Fprintf(w, "samples      %d (lost: %s)\n", t.Samples, lost)
	fmt.Fprintf(w, "processes    %d\nthreads      %d (%d sampled)\n", len(t.Processes), t.ThreadCount(), t.SampledThreads())
	if rings, ok := t.Metadata["nsprof.memprof.lost"]; ok {
		r, _ := strconv.ParseInt(rings, 10, 64)
		s, _ := strconv.ParseInt(t.Metadata["nsprof.memprof.signal-dropped"], 10, 64)
		fmt.Fprintf(w, "memprof      %s\n", memLost(r, s))
	}
	fmt.Fprintf(w, "marks        %d\ncounters     %d\nlogs         %d\nfiles        %d\n", len(t.Marks), len(t.Counters), len(t.Logs), len(t.Files))
	if c, ok := t.Collector(); ok {
		fmt.Fprintf(w, "collector    %s\n", collectorLine(c))
	}
	for _, k := range []string{"nsprof.event", "nsprof.frequency", "uname.release", "hostname"} {
		if v := t.Metadata[k]; v != "" {
			fmt.Fprintf(w, "%-12s %s\n", k, textsafe.Name(v, 0))
		}
	}
	fmt.Fprintf(w, "\n%-14s %9s %12s\n", "Frame type", "Count", "Bytes")
	var count int
	var bytes int64
	for _, typ := range frameTypes(t) {
		st := t.Frames[typ]
		count += st.Count
		bytes += st.Bytes
		fmt.Fprintf(w, "%-14s %9d %12d\n", typ, st.Count, st.Bytes)
	}
	fmt.Fprintf(w, "%-14s %9d %12d\n", "total", count, bytes)
}

// frameTypes returns the frame types of t in numeric order.
func frameTypes(t *analyze.Timeline) []capture.FrameType {
	var types []capture.FrameType
	for typ := range t.Frames {
		types = append(types, typ)
	}
	slices.Sort(types)
	return types
}

// Timeline views' JSON: the report document's schema and capture, with
// the view's own field.
type (
	jsonTimeline struct {
		Schema    string                       `json:"schema"`
		Capture   jsonTimelineCapture          `json:"capture"`
		View      string                       `json:"view"`
		Marks     []analyze.MarkStat           `json:"marks,omitempty"`
		Counters  []jsonCounter                `json:"counters,omitempty"`
		Processes []jsonProcess                `json:"processes,omitempty"`
		Logs      []jsonLog                    `json:"logs,omitempty"`
		Frames    map[string]analyze.FrameStat `json:"frames,omitempty"`
	}
	jsonTimelineCapture struct {
		File        string            `json:"file"`
		CaptureTime string            `json:"capture_time"`
		Duration    float64           `json:"duration_seconds"`
		Samples     int               `json:"samples"`
		Processes   int               `json:"processes"`
		Threads     int               `json:"threads"`
		CPUs        []int             `json:"cpus"`
		Lost        *int64            `json:"lost_samples,omitempty"`
		Metadata    map[string]string `json:"metadata,omitempty"`
		Warnings    []string          `json:"warnings,omitempty"`
		Damage      string            `json:"damage,omitempty"`
		// Collector: the SYSPROF_CONTROL_FD totals, when recorded.
		Collector *analyze.CollectorStats `json:"collector,omitempty"`
	}
	jsonCounter struct {
		analyze.CounterStat
		Sparkline string `json:"sparkline"`
	}
	jsonProcess struct {
		PID     int32  `json:"pid"`
		NSPID   int32  `json:"nspid,omitempty"`
		PPID    int32  `json:"ppid,omitempty"`
		Comm    string `json:"comm,omitempty"`
		Cmdline string `json:"cmdline,omitempty"`
		// Redacted says the recorder cut Cmdline to the program's name.
		Redacted  bool    `json:"cmdline_redacted,omitempty"`
		Container string  `json:"container"`
		Start     float64 `json:"start_seconds"`
		End       float64 `json:"end_seconds"`
		Exited    bool    `json:"exited"`
		Samples   int     `json:"samples"`
		Threads   int     `json:"threads"`
		// ThreadList are the threads other than the main one.
		ThreadList []jsonThread `json:"thread_list,omitempty"`
	}
	jsonThread struct {
		TID     int32   `json:"tid"`
		Comm    string  `json:"comm,omitempty"`
		Start   float64 `json:"start_seconds"`
		End     float64 `json:"end_seconds"`
		Exited  bool    `json:"exited"`
		Samples int     `json:"samples"`
	}
	jsonLog struct {
		Time     float64 `json:"time_seconds"`
		PID      int32   `json:"pid"`
		Severity string  `json:"severity"`
		Domain   string  `json:"domain"`
		Message  string  `json:"message"`
	}
)

func writeTimelineJSON(w io.Writer, t *analyze.Timeline, o reportOptions, marks []capture.Mark, logs []capture.Log, procs []*analyze.ProcessSpan, loadErr error) error {
	doc := jsonTimeline{
		Schema: reportSchema,
		Capture: jsonTimelineCapture{File: o.Input, CaptureTime: t.Header.CaptureTime, Duration: float64(t.Duration()) / 1e9,
			Samples: t.Samples, Processes: len(t.Processes), Threads: t.ThreadCount(), CPUs: t.CPUs, Metadata: t.Metadata, Warnings: t.Warnings},
		View: o.Timeline,
	}
	if doc.Capture.CPUs == nil {
		doc.Capture.CPUs = []int{}
	}
	if t.HasLost {
		doc.Capture.Lost = &t.Lost
	}
	if c, ok := t.Collector(); ok {
		doc.Capture.Collector = &c
	}
	if loadErr != nil {
		doc.Capture.Damage = loadErr.Error()
	}
	sec := func(ns int64) float64 { return float64(ns-t.Start) / 1e9 }
	switch o.Timeline {
	case "marks":
		doc.Marks = analyze.MarkStats(marks)
	case "counters":
		since, until := timeRange(t, o.View.Filter)
		for _, c := range t.Counters {
			doc.Counters = append(doc.Counters, jsonCounter{c.Stats(since, until), c.Sparkline(max(since, t.Start), min(until, t.End), sparkWidth)})
		}
	case "processes":
		for _, p := range procs {
			doc.Processes = append(doc.Processes, jsonProcess{PID: p.PID, NSPID: p.NSPID, PPID: p.PPID, Comm: p.Comm, Cmdline: p.Cmdline, Redacted: p.CmdlineRedacted,
				Container: p.Container.Label(), Start: sec(p.Start), End: sec(p.End), Exited: p.Exited, Samples: p.Samples, Threads: p.Threads, ThreadList: jsonThreads(p.Tasks, sec)})
		}
	case "logs":
		for _, l := range logs {
			doc.Logs = append(doc.Logs, jsonLog{Time: sec(l.Time), PID: l.PID, Severity: severityName(l.Severity), Domain: l.Domain, Message: l.Message})
		}
	case "summary":
		doc.Frames = make(map[string]analyze.FrameStat)
		for typ, st := range t.Frames {
			doc.Frames[typ.String()] = st
		}
	}
	enc := json.NewEncoder(textsafe.JSONWriter(w))
	enc.SetIndent("", "  ")
	return enc.Encode(doc)
}
