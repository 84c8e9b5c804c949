package report

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"nsprof/analyze"
	"nsprof/capture"
	"nsprof/internal/textsafe"
)

// selection is what a timeline view shows of a timeline: the marks, logs
// and processes of the selected pids in the selected time range.
type selection struct {
	since, until int64 // capture clock, [since, until)
	marks        []capture.Mark
	logs         []capture.Log
	procs        []*analyze.ProcessSpan
}

// selectTimeline applies f's PIDs, Container, Since and Until to t: a
// mark or log is in a container when the process it names is.
func selectTimeline(t *analyze.Timeline, f analyze.Filter) selection {
	s := selection{since: t.Start + int64(f.Since), until: math.MaxInt64}
	if f.Until > 0 {
		s.until = t.Start + int64(f.Until)
	}
	var inContainer map[int32]bool
	if f.Container != "" {
		inContainer = make(map[int32]bool)
		for _, p := range t.Processes {
			if p.Container.Match(f.Container) {
				inContainer[p.PID] = true
			}
		}
	}
	wantPID := func(pid int32) bool {
		return (len(f.PIDs) == 0 || slices.Contains(f.PIDs, pid)) && (inContainer == nil || inContainer[pid])
	}
	for _, m := range t.Marks {
		if m.Time >= s.since && m.Time < s.until && wantPID(m.PID) {
			s.marks = append(s.marks, m)
		}
	}
	for _, l := range t.Logs {
		if l.Time >= s.since && l.Time < s.until && wantPID(l.PID) {
			s.logs = append(s.logs, l)
		}
	}
	for _, p := range t.Processes {
		if p.End >= s.since && p.Start < s.until && wantPID(p.PID) {
			s.procs = append(s.procs, p)
		}
	}
	return s
}

// countsText says how many samples a capture holds, of how many processes,
// and how many processes it tells of: the first line of every view.
func countsText(samples int64, sampled, processes int) string {
	if samples == 0 {
		return fmt.Sprintf("0 samples, %d processes in the capture", processes)
	}
	return fmt.Sprintf("%d samples of %d processes, %d processes in the capture", samples, sampled, processes)
}

// timelineView writes a timeline view of t.
func timelineView(w io.Writer, t *analyze.Timeline, v *analyze.View, o Options) error {
	sel := selectTimeline(t, o.Select.Filter)
	if o.Format == JSON {
		return timelineJSON(w, t, v, o, sel)
	}
	_, err := fmt.Fprintf(w, "%s: %s, %s\n", textsafe.Escape(o.File), seconds3(t.Duration()), countsText(int64(t.Samples), t.SampledProcesses(), len(t.Processes)))
	switch o.View {
	case ViewMarks:
		marksText(w, analyze.MarkStats(sel.marks), o.Width)
		st, counts := stalls(sel, v, o)
		stallsText(w, t, sel, st, counts, v != nil, o)
		collectorText(w, t)
	case ViewCounters:
		countersText(w, t, sel.since, sel.until, o.Width)
	case ViewProcesses:
		processesText(w, t, sel.procs, o.Width)
	case ViewLogs:
		logsText(w, t, sel.logs, o.Width)
	case ViewSummary:
		summaryText(w, t)
	}
	return err
}

func marksText(w io.Writer, stats []analyze.MarkStat, width int) {
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
		line := fmt.Sprintf("%-*s %7d %11s %11s %11s %11s %11s", nameW, textsafe.Cut(names[i], nameW), s.Count,
			fmtDuration(float64(s.Min)), fmtDuration(float64(s.Max)), fmtDuration(s.Mean), fmtDuration(s.Median), fmtDuration(float64(s.P95)))
		fmt.Fprintln(w, textsafe.Cut(line, width))
	}
}

// collectorText says what the SYSPROF_CONTROL_FD rings took and lost,
// when the capture has the totals.
func collectorText(w io.Writer, t *analyze.Timeline) {
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

func countersText(w io.Writer, t *analyze.Timeline, since, until int64, width int) {
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
		line := fmt.Sprintf("%-*s %7d %12s %12s %12s  %s", nameW, textsafe.Cut(names[i], nameW), s.Count,
			fmtValue(s.Min), fmtValue(s.Mean), fmtValue(s.Max), c.Sparkline(from, to, sparkWidth))
		fmt.Fprintln(w, textsafe.Cut(line, width))
	}
}

// maxContainerWidth is the widest the processes view pads its container
// column; a longer label is printed whole, shifting its row's command.
const maxContainerWidth = 64

func processesText(w io.Writer, t *analyze.Timeline, procs []*analyze.ProcessSpan, width int) {
	if len(procs) == 0 {
		fmt.Fprintln(w, "no processes")
		return
	}
	// The container column fits the longest label (up to
	// maxContainerWidth) and is never cut: a Podman label holds the
	// container's name and id.
	labels := make([]string, len(procs))
	ctrW := 20
	for i, p := range procs {
		labels[i] = textsafe.Escape(p.Container.Label())
		ctrW = max(ctrW, min(utf8.RuneCountInString(labels[i]), maxContainerWidth))
	}
	fmt.Fprintf(w, "%7s %7s %7s %9s %9s %8s %7s  %-*s %s\n", "PID", "NS-PID", "PPID", "Start", "End", "Samples", "Threads", ctrW, "Container", "Command")
	for i, p := range procs {
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
		line := fmt.Sprintf("%7d %7s %7s %9s %9s %8d %7d  %-*s %s", p.PID, ns, pp, fmt.Sprintf("+%.3fs", float64(p.Start-t.Start)/1e9), end,
			p.Samples, p.Threads, ctrW, labels[i], textsafe.Name(cmd, 0))
		fmt.Fprintln(w, textsafe.Cut(line, width))
		// The programs it ran before its last, each until the exec of
		// the next.
		for k := 0; k+1 < len(p.Programs); k++ {
			pg, next := p.Programs[k], p.Programs[k+1]
			cmd := pg.Cmdline
			if cmd == "" {
				cmd = "[" + pg.Comm + "]"
			}
			line := fmt.Sprintf("%7s %7s %7s %9s %9s %8s %7s  %-*s   before exec: %s", "", "", "", fmt.Sprintf("+%.3fs", float64(pg.Since-t.Start)/1e9),
				fmt.Sprintf("+%.3fs", float64(next.Since-t.Start)/1e9), "", "", ctrW, "", textsafe.Name(cmd, 0))
			fmt.Fprintln(w, textsafe.Cut(line, width))
		}
		for _, th := range p.Tasks {
			end := "running"
			if th.Exited {
				end = fmt.Sprintf("+%.3fs", float64(th.End-t.Start)/1e9)
			}
			name := th.Comm
			if name == "" {
				name = p.Comm
			}
			line := fmt.Sprintf("%7d %7s %7s %9s %9s %8d %7s  %-*s   thread %s", th.TID, "", "", fmt.Sprintf("+%.3fs", float64(th.Start-t.Start)/1e9), end,
				th.Samples, "", ctrW, "", textsafe.Name(name, 0))
			fmt.Fprintln(w, textsafe.Cut(line, width))
		}
	}
}

// SeverityName names a log severity (GLib's log level bits) as the logs
// view prints it: "ERROR", "WARNING"..., "LEVEL<n>" for none of them.
func SeverityName(s uint16) string {
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

func logsText(w io.Writer, t *analyze.Timeline, logs []capture.Log, width int) {
	if len(logs) == 0 {
		fmt.Fprintln(w, "no logs")
		return
	}
	for _, l := range logs {
		// A multi-line message keeps its lines, indented.
		msg := textsafe.Lines(strings.TrimRight(l.Message, "\n"), "\n    ")
		line := fmt.Sprintf("+%.6fs %-8s %7d  %s: %s", float64(l.Time-t.Start)/1e9, SeverityName(l.Severity), l.PID, textsafe.Name(l.Domain, 0), msg)
		if !strings.Contains(line, "\n") {
			line = textsafe.Cut(line, width)
		}
		fmt.Fprintln(w, line)
	}
}

func summaryText(w io.Writer, t *analyze.Timeline) {
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
	fmt.Fprintf(w, "processes    %d (%d sampled)\nthreads      %d (%d sampled)\n", len(t.Processes), t.SampledProcesses(), t.ThreadCount(), t.SampledThreads())
	if o := t.OutOfRange; o.Frames > 0 {
		fmt.Fprintf(w, "out of range %d frames stamped before the start (the earliest %s before it)\n", o.Frames, seconds3(t.Header.StartTime-o.Earliest))
	}
	if rings, ok := t.Metadata[capture.MetaMemprofLost]; ok {
		r, _ := strconv.ParseInt(rings, 10, 64)
		s, _ := strconv.ParseInt(t.Metadata[capture.MetaMemprofSignalDropped], 10, 64)
		fmt.Fprintf(w, "memprof      %s\n", memLost(r, s))
	}
	fmt.Fprintf(w, "marks        %d\ncounters     %d\nlogs         %d\nfiles        %d\n", len(t.Marks), len(t.Counters), len(t.Logs), len(t.Files))
	if c, ok := t.Collector(); ok {
		fmt.Fprintf(w, "collector    %s\n", collectorLine(c))
	}
	for _, k := range []string{capture.MetaEvent, capture.MetaFrequency, "uname.release", "hostname"} {
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
