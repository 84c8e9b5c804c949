package report

import (
	"io"

	"nsprof/analyze"
)

// The timeline views' JSON: the report document's schema and capture,
// with the view's own field.
type (
	jsonTimeline struct {
		Schema  string              `json:"schema"`
		Capture jsonTimelineCapture `json:"capture"`
		View    string              `json:"view"`
		Marks   []analyze.MarkStat  `json:"marks,omitempty"`
		// StallCounts and Stalls: the probed calls over the stall
		// threshold (StallNs), with the marks view.
		StallNs     int64                        `json:"stall_threshold_ns,omitempty"`
		StallCounts []analyze.StallStats         `json:"stall_counts,omitempty"`
		Stalls      []analyze.Stall              `json:"stalls,omitempty"`
		Counters    []jsonCounter                `json:"counters,omitempty"`
		Processes   []jsonProcess                `json:"processes,omitempty"`
		Logs        []jsonLog                    `json:"logs,omitempty"`
		Frames      map[string]analyze.FrameStat `json:"frames,omitempty"`
	}
	jsonTimelineCapture struct {
		File        string            `json:"file"`
		CaptureTime string            `json:"capture_time"`
		Duration    float64           `json:"duration_seconds"`
		Samples     int               `json:"samples"`
		Processes   int               `json:"processes"`
		Sampled     int               `json:"sampled_processes"`
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
		Redacted  bool   `json:"cmdline_redacted,omitempty"`
		Container string `json:"container"`
		// ContainerID is the full id of a Podman container.
		ContainerID string  `json:"container_id,omitempty"`
		Start       float64 `json:"start_seconds"`
		End         float64 `json:"end_seconds"`
		Exited      bool    `json:"exited"`
		Samples     int     `json:"samples"`
		Threads     int     `json:"threads"`
		// ThreadList are the threads other than the main one.
		ThreadList []jsonThread `json:"thread_list,omitempty"`
		// Programs are the programs a process that exec'd ran, in
		// order; the last is comm and cmdline.
		Programs []jsonProgram `json:"programs,omitempty"`
	}
	jsonThread struct {
		TID     int32   `json:"tid"`
		Comm    string  `json:"comm,omitempty"`
		Start   float64 `json:"start_seconds"`
		End     float64 `json:"end_seconds"`
		Exited  bool    `json:"exited"`
		Samples int     `json:"samples"`
	}
	jsonProgram struct {
		// Since is when the process began to run it: its exec, or
		// when the capture first tells of the process.
		Since   float64 `json:"since_seconds"`
		Comm    string  `json:"comm,omitempty"`
		Cmdline string  `json:"cmdline,omitempty"`
	}
	jsonLog struct {
		Time     float64 `json:"time_seconds"`
		PID      int32   `json:"pid"`
		Severity string  `json:"severity"`
		Domain   string  `json:"domain"`
		Message  string  `json:"message"`
	}
)

func timelineJSON(w io.Writer, t *analyze.Timeline, v *analyze.View, o Options, sel selection) error {
	doc := jsonTimeline{
		Schema: Schema,
		Capture: jsonTimelineCapture{File: o.File, CaptureTime: t.Header.CaptureTime, Duration: float64(t.Duration()) / 1e9,
			Samples: t.Samples, Processes: len(t.Processes), Sampled: t.SampledProcesses(), Threads: t.ThreadCount(), CPUs: t.CPUs, Metadata: t.Metadata, Warnings: t.Warnings},
		View: o.View.String(),
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
	if o.Damage != nil {
		doc.Capture.Damage = o.Damage.Error()
	}
	sec := func(ns int64) float64 { return float64(ns-t.Start) / 1e9 }
	switch o.View {
	case ViewMarks:
		doc.Marks = analyze.MarkStats(sel.marks)
		doc.Stalls, doc.StallCounts = stalls(sel, v, o)
		if len(doc.StallCounts) > 0 {
			doc.StallNs = o.stallThreshold()
		}
	case ViewCounters:
		for _, c := range t.Counters {
			doc.Counters = append(doc.Counters, jsonCounter{c.Stats(sel.since, sel.until), c.Sparkline(max(sel.since, t.Start), min(sel.until, t.End), sparkWidth)})
		}
	case ViewProcesses:
		for _, p := range sel.procs {
			doc.Processes = append(doc.Processes, jsonProcess{PID: p.PID, NSPID: p.NSPID, PPID: p.PPID, Comm: p.Comm, Cmdline: p.Cmdline, Redacted: p.CmdlineRedacted,
				Container: p.Container.Label(), ContainerID: containerID(p.Container), Start: sec(p.Start), End: sec(p.End), Exited: p.Exited, Samples: p.Samples, Threads: p.Threads, ThreadList: jsonThreads(p.Tasks, sec),
				Programs: jsonPrograms(p.Programs, sec)})
		}
	case ViewLogs:
		for _, l := range sel.logs {
			doc.Logs = append(doc.Logs, jsonLog{Time: sec(l.Time), PID: l.PID, Severity: SeverityName(l.Severity), Domain: l.Domain, Message: l.Message})
		}
	case ViewSummary:
		doc.Frames = make(map[string]analyze.FrameStat)
		for typ, st := range t.Frames {
			doc.Frames[typ.String()] = st
		}
	}
	return encodeJSON(w, doc)
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

// jsonPrograms converts a process's programs; nil for none.
func jsonPrograms(ps []analyze.Program, sec func(int64) float64) []jsonProgram {
	var out []jsonProgram
	for _, pg := range ps {
		out = append(out, jsonProgram{Since: sec(pg.Since), Comm: pg.Comm, Cmdline: pg.Cmdline})
	}
	return out
}

// containerID returns the full id of c, "" for none.
func containerID(c *analyze.Container) string {
	if c == nil {
		return ""
	}
	return c.ID
}
