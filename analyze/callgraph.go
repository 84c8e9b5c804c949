package analyze

import (
	"cmp"
	"slices"
)

// CallStat is one function's line of the flat profile of instrumented
// calls ([View.CallGraph]), as gprof prints it.
type CallStat struct {
	Func FuncID `json:"-"`
	// Name and DSO name the function.
	Name string `json:"function"`
	DSO  string `json:"dso"`
	// Calls counts the calls to the function.
	Calls int64 `json:"calls"`
	// Total and Self are the instrumented time of those calls, callees
	// included and not, in nanoseconds: -finstrument-functions code
	// only ([CallGraph.Timed]).
	Total int64 `json:"total_ns"`
	Self  int64 `json:"self_ns"`
	// Samples counts the stack samples taken in the function itself, and
	// CPU is the CPU time they stand for (0 when the sampling period is
	// unknown): the self time of code whose calls are not timed (-pg).
	Samples int64 `json:"samples"`
	CPU     int64 `json:"cpu_ns"`
}

// CallArc is the calls from one function to another.
type CallArc struct {
	Caller, Callee FuncID `json:"-"`
	// CallerName and CallerDSO name the caller: "<spontaneous>" when the
	// call site is not known (it was not code the capture maps).
	CallerName string `json:"caller"`
	CallerDSO  string `json:"caller_dso"`
	CalleeName string `json:"callee"`
	CalleeDSO  string `json:"callee_dso"`
	// Calls counts the calls; Total and Self are their time, as
	// [CallStat]'s.
	Calls int64 `json:"calls"`
	Total int64 `json:"total_ns"`
	Self  int64 `json:"self_ns"`
}

// CallGraph is the flat profile and the call graph of the instrumented
// calls a view selects.
type CallGraph struct {
	// Funcs are the functions called or sampled, by time (instrumented
	// self time, else CPU self time), then calls, then name.
	Funcs []CallStat
	// Arcs are the caller-callee pairs, by calls then names.
	Arcs []CallArc
	// Timed says some calls have their time measured; CPUPeriod is the
	// CPU time of a stack sample in ns (0: unknown).
	Timed     bool
	CPUPeriod int64
}

// Spontaneous names the caller of the calls whose call site is unknown.
const Spontaneous = "<spontaneous>"

// CallGraph builds the flat profile and call graph of the view's
// samples: the instrumented calls (record --calls) by function and by
// arc, with the stack samples taken in each function as the self time
// of untimed (-pg) calls. A view of a capture without calls gives only
// the sampled functions, with no calls.
func (v *View) CallGraph() *CallGraph {
	p := v.Profile
	g := &CallGraph{Timed: p.callStats.timed}
	cpuCol, callCol := -1, p.callCol
	for i, t := range p.SampleTypes {
		if t == CPUType {
			cpuCol = i
			g.CPUPeriod = p.stackValues[i]
		}
	}
	funcs := make(map[FuncID]*CallStat)
	fn := func(f FuncID) *CallStat {
		s := funcs[f]
		if s == nil {
			s = &CallStat{Func: f, Name: Spontaneous}
			if f >= 0 && int(f) < len(p.Funcs) {
				s.Name, s.DSO = p.Funcs[f].Name, p.Funcs[f].DSO
			}
			funcs[f] = s
		}
		return s
	}
	type arcKey struct{ caller, callee FuncID }
	arcs := make(map[arcKey]*CallArc)
	for i := range v.Samples {
		s := &v.Samples[i]
		st := v.Stack(s.Stack)
		if len(st) == 0 {
			continue
		}
		callee := v.Frames[st[0]].Func
		if callCol > 0 {
			if n := p.Value(s, callCol); n > 0 {
				var total, self int64
				if g.Timed {
					total, self = p.Value(s, callCol+1), p.Value(s, callCol+2)
				}
				caller := FuncID(-1)
				if len(st) > 1 {
					caller = v.Frames[st[1]].Func
				}
				f := fn(callee)
				f.Calls += n
				f.Total += total
				f.Self += self
				k := arcKey{caller, callee}
				a := arcs[k]
				if a == nil {
					c := fn(caller)
					a = &CallArc{Caller: caller, Callee: callee, CallerName: c.Name, CallerDSO: c.DSO, CalleeName: f.Name, CalleeDSO: f.DSO}
					arcs[k] = a
				}
				a.Calls += n
				a.Total += total
				a.Self += self
				continue
			}
		}
		if p.Value(s, 0) > 0 { // a stack sample
			f := fn(callee)
			f.Samples++
			if cpuCol >= 0 {
				f.CPU += p.Value(s, cpuCol)
			}
		}
	}
	for _, f := range funcs {
		if f.Calls > 0 || f.Samples > 0 {
			g.Funcs = append(g.Funcs, *f)
		}
	}
	time := func(f *CallStat) int64 {
		if g.Timed && f.Calls > 0 {
			return f.Self
		}
		return f.CPU
	}
	slices.SortFunc(g.Funcs, func(a, b CallStat) int {
		if c := cmp.Compare(time(&b), time(&a)); c != 0 {
			return c
		}
		if c := cmp.Compare(b.Samples, a.Samples); c != 0 {
			return c
		}
		if c := cmp.Compare(b.Calls, a.Calls); c != 0 {
			return c
		}
		return cmp.Or(cmp.Compare(a.Name, b.Name), cmp.Compare(a.DSO, b.DSO))
	})
	for _, a := range arcs {
		g.Arcs = append(g.Arcs, *a)
	}
	slices.SortFunc(g.Arcs, func(a, b CallArc) int {
		if c := cmp.Compare(b.Calls, a.Calls); c != 0 {
			return c
		}
		return cmp.Or(cmp.Compare(a.CalleeName, b.CalleeName), cmp.Compare(a.CallerName, b.CallerName), cmp.Compare(a.CalleeDSO, b.CalleeDSO), cmp.Compare(a.CallerDSO, b.CallerDSO))
	})
	return g
}
