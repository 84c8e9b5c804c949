package report

import (
	"encoding/json"
	"io"

	"nsprof/analyze"
	"nsprof/internal/textsafe"
)

// The sample views' JSON document (schema [Schema]).
type (
	jsonReport struct {
		Schema   string      `json:"schema"`
		Capture  jsonCapture `json:"capture"`
		Selected int         `json:"selected"`
		// SampleType is the value the functions and trees weigh, when
		// not the number of samples.
		SampleType *analyze.ValueType `json:"sample_type,omitempty"`
		View       string             `json:"view"`
		// Lines says the functions are rows of source lines (report
		// --lines): each with its file and line.
		Lines   bool        `json:"lines,omitempty"`
		GroupBy string      `json:"group_by"`
		Groups  []jsonGroup `json:"groups"`
		// Calls is the calls view's flat profile and call graph.
		Calls *jsonCalls `json:"calls,omitempty"`
		// Base, BaseSelected and Diff are the capture the top view is
		// compared with (report --diff-base), the samples selected in
		// it and the functions' differences ([analyze.FuncDiff]).
		Base         *jsonCapture       `json:"base,omitempty"`
		BaseSelected int                `json:"base_selected,omitempty"`
		Diff         []analyze.FuncDiff `json:"diff,omitempty"`
	}
	jsonCapture struct {
		File        string         `json:"file"`
		CaptureTime string         `json:"capture_time"`
		Duration    float64        `json:"duration_seconds"`
		Samples     int            `json:"samples"`
		Processes   int            `json:"processes"`
		Sampled     int            `json:"sampled_processes"`
		Lost        *int64         `json:"lost_samples,omitempty"`
		Symbols     map[string]int `json:"symbols"`
		Warnings    []string       `json:"warnings,omitempty"`
		Damage      string         `json:"damage,omitempty"`
	}
	jsonGroup struct {
		Key       string `json:"key"`
		PID       int32  `json:"pid,omitempty"`
		TID       int32  `json:"tid,omitempty"`
		Comm      string `json:"comm,omitempty"`
		Cmdline   string `json:"cmdline,omitempty"`
		NSPID     int32  `json:"nspid,omitempty"`
		Container string `json:"container,omitempty"`
		// ContainerID is the full id of a Podman container.
		ContainerID string             `json:"container_id,omitempty"`
		Samples     int                `json:"samples"`
		Value       *int64             `json:"value,omitempty"`
		Functions   []analyze.FuncStat `json:"functions,omitempty"`
		Tree        *analyze.Node      `json:"tree,omitempty"`
	}
)

func samplesJSON(w io.Writer, v *analyze.View, o Options) error {
	p, samples := v.Profile, v.Samples
	doc := newJSONReport(v, o)
	for _, g := range p.Group(samples, o.By) {
		jg := jsonGroup{Key: g.Key, Samples: len(g.Samples)}
		if doc.SampleType != nil {
			jg.Value = &g.Weight
		}
		if o.By != analyze.GroupNone {
			jg.Container, jg.ContainerID = g.Container, g.ContainerID
		}
		if pr := g.Process; pr != nil {
			jg.PID, jg.Comm, jg.Cmdline, jg.NSPID = pr.PID, pr.Comm, pr.Cmdline, pr.NSPID
			if o.By == analyze.GroupComm {
				// The names the group is of: a process that exec'd
				// is in one group per program it ran.
				jg.Comm, jg.Cmdline = g.Names()
			}
		}
		if g.Thread != nil {
			jg.TID = g.Thread.TID
		}
		if o.View == ViewTree || o.View == ViewBottomUp {
			jg.Tree = o.tree(p, g.Samples)
		} else {
			jg.Functions, _ = o.top(p, g.Samples)
		}
		doc.Groups = append(doc.Groups, jg)
	}
	return encodeJSON(w, doc)
}

// newJSONReport returns the document of the sample view of v, without
// its groups.
func newJSONReport(v *analyze.View, o Options) jsonReport {
	p := v.Profile
	doc := jsonReport{
		Schema:   Schema,
		Capture:  captureDoc(o.File, p),
		Selected: len(v.Samples),
		View:     o.View.String(),
		Lines:    o.Lines,
		GroupBy:  o.By.String(),
		Groups:   []jsonGroup{},
	}
	if vi := p.Selected(); vi != 0 {
		doc.SampleType = &p.SampleTypes[vi]
	}
	if o.Damage != nil {
		doc.Capture.Damage = o.Damage.Error()
	}
	return doc
}

// captureDoc describes capture file, loaded as p.
func captureDoc(file string, p *analyze.Profile) jsonCapture {
	c := jsonCapture{
		File: file, CaptureTime: p.Header.CaptureTime, Duration: float64(p.Duration()) / 1e9,
		Samples: int(stackSamples(p)), Processes: len(p.Processes), Sampled: p.SampledProcesses(), Symbols: p.SymbolStats, Warnings: p.Warnings,
	}
	if p.HasLost {
		c.Lost = &p.Lost
	}
	return c
}

// encodeJSON writes doc indented, with the characters that could pass
// for others escaped (see textsafe.JSONWriter).
func encodeJSON(w io.Writer, doc any) error {
	enc := json.NewEncoder(textsafe.JSONWriter(w))
	enc.SetIndent("", "  ")
	return enc.Encode(doc)
}
