package report

import (
	"fmt"
	"io"

	"nsprof/analyze"
	"nsprof/capture"
	"nsprof/internal/textsafe"
)

// jsonCalls is the calls view in the JSON document: the flat profile
// ("functions") and the call graph's arcs; times in nanoseconds.
type jsonCalls struct {
	// Timed says some calls were timed (-finstrument-functions); self
	// time is otherwise the CPU samples' ("self_time_source": "cpu
	// samples", or "instrumented").
	Timed          bool               `json:"timed"`
	SelfTimeSource string             `json:"self_time_source"`
	CPUPeriod      int64              `json:"cpu_period_ns"`
	Functions      []analyze.CallStat `json:"functions"`
	Arcs           []analyze.CallArc  `json:"arcs"`
	// Probes are the functions of record --probe over their threads and
	// callers: calls, total, shortest and longest call.
	Probes []jsonProbe `json:"probes,omitempty"`
}

// jsonProbe is one probed function of record --probe.
type jsonProbe struct {
	Function string `json:"function"`
	Calls    int64  `json:"calls"`
	Total    int64  `json:"total_ns"`
	Mean     int64  `json:"mean_ns"`
	Min      int64  `json:"min_ns"`
	Max      int64  `json:"max_ns"`
}

// probesJSON returns the probed functions' ranges.
func probesJSON(p *analyze.Profile) []jsonProbe {
	var out []jsonProbe
	for _, r := range p.ProbeRanges() {
		out = append(out, jsonProbe{Function: r.Func, Calls: r.Calls, Total: r.Total, Mean: r.Total / max(r.Calls, 1), Min: r.Min, Max: r.Max})
	}
	return out
}

// selfSource says where the flat profile's self time comes from.
func selfSource(g *analyze.CallGraph, p *analyze.Profile) string {
	if g.Timed && len(p.ProbeRanges()) > 0 {
		return "probes"
	}
	if g.Timed {
		return "instrumented"
	}
	return "cpu samples"
}

func callsJSON(w io.Writer, v *analyze.View, o Options) error {
	p := v.Profile
	g := v.CallGraph()
	doc := jsonReport{
		Schema: Schema,
		Capture: jsonCapture{
			File: o.File, CaptureTime: p.Header.CaptureTime, Duration: float64(p.Duration()) / 1e9,
			Samples: int(stackSamples(p)), Processes: len(p.Processes), Sampled: p.SampledProcesses(), Symbols: p.SymbolStats, Warnings: p.Warnings,
		},
		Selected: len(v.Samples),
		View:     o.View.String(),
		GroupBy:  analyze.GroupNone.String(),
		Groups:   []jsonGroup{},
		Calls: &jsonCalls{
			Timed: g.Timed, SelfTimeSource: selfSource(g, p), CPUPeriod: g.CPUPeriod,
			Functions: g.Funcs, Arcs: g.Arcs, Probes: probesJSON(p),
		},
	}
	if doc.Calls.Functions == nil {
		doc.Calls.Functions = []analyze.CallStat{}
	}
	if doc.Calls.Arcs == nil {
		doc.Calls.Arcs = []analyze.CallArc{}
	}
	if p.HasLost {
		doc.Capture.Lost = &p.Lost
	}
	if o.Damage != nil {
		doc.Capture.Damage = o.Damage.Error()
	}
	return encodeJSON(w, doc)
}

// selfNs is a flat profile line's self time: instrumented when its
// calls are timed, else its CPU samples'.
func selfNs(g *analyze.CallGraph, f *analyze.CallStat) int64 {
	if g.Timed && f.Calls > 0 {
		return f.Self
	}
	return f.CPU
}

// perCallUnit picks the unit of the per-call columns, as gprof does: the
// largest in which the longest total per call stays readable.
func perCallUnit(g *analyze.CallGraph) (string, float64) {
	var most float64
	for i := range g.Funcs {
		f := &g.Funcs[i]
		if f.Calls == 0 {
			continue
		}
		t := max(f.Total, selfNs(g, f))
		most = max(most, float64(t)/float64(f.Calls))
	}
	switch {
	case most >= 1e7:
		return "ms", 1e6
	case most >= 1e4:
		return "us", 1e3
	}
	return "ns", 1
}

// callsText prints the flat profile and the call graph of the
// instrumented calls, in gprof's layout.
func callsText(w io.Writer, v *analyze.View, o Options) error {
	if o.Damage != nil {
		fmt.Fprintf(w, "warning: %s; reporting the calls before the damage\n", textsafe.Escape(o.Damage.Error()))
	}
	g := v.CallGraph()
	if recorded, _ := v.CallsRecorded(); !recorded {
		_, err := fmt.Fprintf(w, "%s has no instrumented calls (record code built with -pg or -finstrument-functions with nsprof record --calls)\n", textsafe.Escape(o.File))
		return err
	}
	unit, div := perCallUnit(g)
	fmt.Fprintf(w, "Flat profile:\n\n")
	probes := v.ProbeRanges()
	if g.Timed && len(probes) > 0 {
		fmt.Fprintf(w, "Self and total times are measured by user probes (record --probe): self is outside the\nprobed functions it calls; functions not probed take their self time from the CPU samples.\n")
	} else if g.Timed {
		fmt.Fprintf(w, "Self and total times are measured by the instrumentation (-finstrument-functions);\nfunctions with untimed calls (-pg) or none take their self time from the CPU samples.\n")
	} else if g.CPUPeriod > 0 {
		fmt.Fprintf(w, "Calls are counted, not timed (-pg): self time comes from the CPU samples,\neach counting as %.6f seconds; total time per call is not known.\n", float64(g.CPUPeriod)/1e9)
	} else {
		fmt.Fprintf(w, "Calls are counted, not timed (-pg), and the sampling period is unknown: no times.\n")
	}
	var sum int64
	for i := range g.Funcs {
		sum += selfNs(g, &g.Funcs[i])
	}
	fmt.Fprintf(w, "\n  %%   cumulative   self              self     total\n")
	fmt.Fprintf(w, " time   seconds   seconds    calls %3s/call %3s/call  name\n", unit, unit)
	var cum int64
	rows := len(g.Funcs)
	if o.Limit > 0 && o.Limit < rows {
		rows = o.Limit
	}
	for i := range g.Funcs[:rows] {
		f := &g.Funcs[i]
		self := selfNs(g, f)
		cum += self
		pct := 0.0
		if sum > 0 {
			pct = 100 * float64(self) / float64(sum)
		}
		calls, selfPer, totalPer := "", "", ""
		if f.Calls > 0 {
			calls = fmt.Sprint(f.Calls)
			selfPer = fmt.Sprintf("%.2f", float64(self)/float64(f.Calls)/div)
			if g.Timed {
				totalPer = fmt.Sprintf("%.2f", float64(f.Total)/float64(f.Calls)/div)
			}
		}
		fmt.Fprintf(w, "%6.2f %9.4f %9.4f %8s %8s %8s  %s\n", pct, float64(cum)/1e9, float64(self)/1e9, calls, selfPer, totalPer, funcLabel(f.Name, f.DSO))
	}
	if err := probesText(w, probes); err != nil {
		return err
	}
	return callGraphText(w, g)
}

// probesText prints the probed functions' calls and the mean, shortest
// and longest call of each, over their threads and callers.
func probesText(w io.Writer, probes []capture.ProbeRange) error {
	if len(probes) == 0 {
		return nil
	}
	fmt.Fprintf(w, "\nProbed functions (record --probe), per call:\n\n")
	fmt.Fprintf(w, "%12s %12s %12s %12s %12s  %s\n", "calls", "total ms", "mean us", "min us", "max us", "function")
	for _, r := range probes {
		mean := 0.0
		if r.Calls > 0 {
			mean = float64(r.Total) / float64(r.Calls) / 1e3
		}
		if _, err := fmt.Fprintf(w, "%12d %12.3f %12.3f %12.3f %12.3f  %s\n", r.Calls, float64(r.Total)/1e6, mean, float64(r.Min)/1e3, float64(r.Max)/1e3, textsafe.Escape(r.Func)); err != nil {
			return err
		}
	}
	return nil
}

// callGraphText prints the call graph: for each called function, its
// callers with their share of its calls above it, and its callees below.
func callGraphText(w io.Writer, g *analyze.CallGraph) error {
	index := make(map[analyze.FuncID]int)
	var called []*analyze.CallStat
	for i := range g.Funcs {
		if g.Funcs[i].Calls > 0 {
			called = append(called, &g.Funcs[i])
			index[g.Funcs[i].Func] = len(called)
		}
	}
	label := func(name, dso string, f analyze.FuncID) string {
		if i, ok := index[f]; ok {
			return fmt.Sprintf("%s [%d]", funcLabel(name, dso), i)
		}
		return funcLabel(name, dso)
	}
	var total int64
	for _, f := range called {
		if g.Timed {
			total += f.Self
		}
	}
	fmt.Fprintf(w, "\nCall graph:\n\n")
	fmt.Fprintf(w, "index  %% time      self  children        called  name\n")
	secs := func(ns int64) string {
		if !g.Timed {
			return ""
		}
		return fmt.Sprintf("%.4f", float64(ns)/1e9)
	}
	for i, f := range called {
		for _, a := range g.Arcs {
			if a.Callee == f.Func {
				fmt.Fprintf(w, "%15s %9s %9s %13s      %s\n", "", secs(a.Self), secs(a.Total-a.Self), fmt.Sprintf("%d/%d", a.Calls, f.Calls), label(a.CallerName, a.CallerDSO, a.Caller))
			}
		}
		pct := ""
		if g.Timed && total > 0 {
			pct = fmt.Sprintf("%.1f", 100*float64(f.Total)/float64(total))
		}
		fmt.Fprintf(w, "%-6s %6s %9s %9s %13d  %s\n", fmt.Sprintf("[%d]", i+1), pct, secs(f.Self), secs(f.Total-f.Self), f.Calls, label(f.Name, f.DSO, f.Func))
		for _, a := range g.Arcs {
			if a.Caller == f.Func {
				var of int64
				if c := index[a.Callee]; c > 0 {
					of = called[c-1].Calls
				}
				fmt.Fprintf(w, "%15s %9s %9s %13s      %s\n", "", secs(a.Self), secs(a.Total-a.Self), fmt.Sprintf("%d/%d", a.Calls, of), label(a.CalleeName, a.CalleeDSO, a.Callee))
			}
		}
		if _, err := fmt.Fprintf(w, "-----------------------------------------------\n"); err != nil {
			return err
		}
	}
	return nil
}
