package analyze

import (
	"bytes"
	"reflect"
	"testing"

	"nsprof/internal/testcaptures"
)

// TestCallColumns: the arc records of a --calls capture are samples
// valued only in the calls, call_time and call_self_time columns, after
// the stack samples' columns, which keep their values; the call graph
// sums them by function and arc, and takes no CPU time from them.
func TestCallColumns(t *testing.T) {
	p, err := Load(bytes.NewReader(testcaptures.Calls(t)), LoadOptions{NoHostFiles: true})
	if err != nil {
		t.Fatal(err)
	}
	checkRows(t, p)
	want := []ValueType{SamplesType, CPUType, CallsType, CallTimeType, CallSelfTimeType}
	if !reflect.DeepEqual(p.SampleTypes, want) {
		t.Fatalf("sample types %v, want %v", p.SampleTypes, want)
	}
	var calls, total, self int64
	for _, a := range testcaptures.CallArcs {
		calls, total, self = calls+a.Count, total+a.Total, self+a.Self
	}
	if got := p.Totals; !reflect.DeepEqual(got, []int64{4, 4e6, calls, total, self}) {
		t.Errorf("totals %v, want [4 4000000 %d %d %d]", got, calls, total, self)
	}
	if k := p.Kind(2); !reflect.DeepEqual(k, []int{2, 3, 4}) {
		t.Errorf("kind of calls: columns %v", k)
	}
	v, err := p.View(ViewOptions{AllKinds: true})
	if err != nil {
		t.Fatal(err)
	}
	g := v.CallGraph()
	if !g.Timed || g.CPUPeriod != 1e6 {
		t.Errorf("timed %t, CPU period %d", g.Timed, g.CPUPeriod)
	}
	funcs := map[string]CallStat{}
	for _, f := range g.Funcs {
		funcs[f.Name] = CallStat{Name: f.Name, DSO: f.DSO, Calls: f.Calls, Total: f.Total, Self: f.Self, Samples: f.Samples, CPU: f.CPU}
	}
	for name, w := range map[string]CallStat{
		"f":    {Calls: 1000000, Total: 20e6, Self: 20e6, Samples: 3, CPU: 3e6},
		"g":    {Calls: 1000, Total: 1e6, Self: 1e6, Samples: 1, CPU: 1e6},
		"run":  {Calls: 1, Total: 30e6, Self: 8.8e6},
		"main": {},
	} {
		got := funcs[name]
		got.Name, got.DSO = "", ""
		if got != w {
			t.Errorf("%s: %+v, want %+v", name, got, w)
		}
	}
	arcs := map[string]int64{}
	for _, a := range g.Arcs {
		arcs[a.CallerName+">"+a.CalleeName] = a.Calls
	}
	wantArcs := map[string]int64{"main>run": 1, "run>f": 1000000, "run>a": 1, "run>b": 1, "a>g": 600, "b>g": 400}
	if !reflect.DeepEqual(arcs, wantArcs) {
		t.Errorf("arcs %v, want %v", arcs, wantArcs)
	}
	// Without AllKinds a view keeps its own kind of samples only.
	if v, _ := p.View(ViewOptions{Value: 2}); len(v.Samples) != len(testcaptures.CallArcs) {
		t.Errorf("view of calls: %d samples, want %d", len(v.Samples), len(testcaptures.CallArcs))
	}
}
