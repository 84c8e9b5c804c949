package export

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"testing"

	"nsprof/analyze"
)

// checkSpeedscope checks a document against speedscope's file format
// schema (file-format-schema.json of speedscope 1.25, written out here as
// Go): the required fields and their types, the constants and enums, and
// what speedscope's importer relies on beyond the schema (frame indices
// in range, one weight per sample). It returns the sampled profiles.
func checkSpeedscope(t testing.TB, data []byte) []map[string]any {
	t.Helper()
	var doc any
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatalf("speedscope: not JSON: %v", err)
	}
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("speedscope schema: "+format, args...)
	}
	obj := func(v any, where string) map[string]any {
		t.Helper()
		m, ok := v.(map[string]any)
		if !ok {
			fail("%s: %T, want object", where, v)
		}
		return m
	}
	arr := func(v any, where string) []any {
		t.Helper()
		a, ok := v.([]any)
		if !ok {
			fail("%s: %T, want array", where, v)
		}
		return a
	}
	num := func(v any, where string) float64 {
		t.Helper()
		f, ok := v.(float64)
		if !ok {
			fail("%s: %T, want number", where, v)
		}
		return f
	}
	str := func(v any, where string) string {
		t.Helper()
		s, ok := v.(string)
		if !ok {
			fail("%s: %T, want string", where, v)
		}
		return s
	}
	required := func(m map[string]any, where string, keys ...string) {
		t.Helper()
		for _, k := range keys {
			if _, ok := m[k]; !ok {
				fail("%s: required %q missing", where, k)
			}
		}
	}
	// FileFormat.File
	file := obj(doc, "file")
	required(file, "file", "$schema", "profiles", "shared")
	if s := str(file["$schema"], "$schema"); s != "https://www.speedscope.app/file-format-schema.json" {
		fail("$schema %q", s)
	}
	for k, v := range file {
		switch k {
		case "activeProfileIndex":
			num(v, k)
		case "exporter", "name":
			str(v, k)
		}
	}
	shared := obj(file["shared"], "shared")
	required(shared, "shared", "frames")
	frames := arr(shared["frames"], "shared.frames")
	// FileFormat.Frame
	for i, f := range frames {
		where := fmt.Sprintf("frames[%d]", i)
		fm := obj(f, where)
		required(fm, where, "name")
		str(fm["name"], where+".name")
		for k, v := range fm {
			switch k {
			case "file":
				str(v, where+".file")
			case "line", "col":
				num(v, where+"."+k)
			}
		}
	}
	units := []string{"bytes", "microseconds", "milliseconds", "nanoseconds", "none", "seconds"}
	var out []map[string]any
	profiles := arr(file["profiles"], "profiles")
	for i, p := range profiles {
		where := fmt.Sprintf("profiles[%d]", i)
		pm := obj(p, where)
		// FileFormat.Profile is anyOf EventedProfile, SampledProfile; the
		// type constant says which.
		switch typ := str(pm["type"], where+".type"); typ {
		case "sampled":
			required(pm, where, "endValue", "name", "samples", "startValue", "type", "unit", "weights")
			str(pm["name"], where+".name")
			start, end := num(pm["startValue"], where+".startValue"), num(pm["endValue"], where+".endValue")
			if u := str(pm["unit"], where+".unit"); !slices.Contains(units, u) {
				fail("%s.unit %q", where, u)
			}
			samples := arr(pm["samples"], where+".samples")
			weights := arr(pm["weights"], where+".weights")
			if len(samples) != len(weights) {
				fail("%s: %d samples, %d weights", where, len(samples), len(weights))
			}
			sum := 0.0
			for j, w := range weights {
				x := num(w, fmt.Sprintf("%s.weights[%d]", where, j))
				if x <= 0 {
					fail("%s.weights[%d] = %v", where, j, x)
				}
				sum += x
			}
			if math.Abs(end-start-sum) > 1e-6 {
				fail("%s: endValue-startValue %v, weights sum to %v", where, end-start, sum)
			}
			for j, s := range samples {
				for k, f := range arr(s, fmt.Sprintf("%s.samples[%d]", where, j)) {
					x := num(f, fmt.Sprintf("%s.samples[%d][%d]", where, j, k))
					if x != math.Trunc(x) || x < 0 || int(x) >= len(frames) {
						fail("%s.samples[%d][%d] = %v: not a frame index (%d frames)", where, j, k, x, len(frames))
					}
				}
			}
			out = append(out, pm)
		case "evented":
			required(pm, where, "endValue", "events", "name", "startValue", "type", "unit")
		default:
			fail("%s.type %q", where, typ)
		}
	}
	if a, ok := file["activeProfileIndex"]; ok && int(a.(float64)) >= len(profiles) {
		fail("activeProfileIndex %v of %d profiles", a, len(profiles))
	}
	return out
}

func TestSpeedscope(t *testing.T) {
	v := loadTestView(t, analyze.ViewOptions{})
	data := generate(t, v, FormatSpeedscope, Options{Title: "t"})
	profiles := checkSpeedscope(t, data)
	// One profile per thread, weights summing to the thread's samples.
	threads := v.Group(v.Samples, analyze.GroupThread)
	if len(profiles) != len(threads) {
		t.Fatalf("%d profiles, %d threads", len(profiles), len(threads))
	}
	var doc struct {
		Shared struct {
			Frames []ssFrame `json:"frames"`
		} `json:"shared"`
		Profiles []struct {
			Name    string  `json:"name"`
			Samples [][]int `json:"samples"`
			Weights []int   `json:"weights"`
		} `json:"profiles"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	// The per-name totals over all profiles are the report's.
	self, total, n := map[string]int{}, map[string]int{}, 0
	for i, p := range doc.Profiles {
		sum := 0
		for j, st := range p.Samples {
			w := p.Weights[j]
			sum += w
			n += w
			if len(st) == 0 {
				continue
			}
			self[doc.Shared.Frames[st[len(st)-1]].Name] += w
			seen := map[string]bool{}
			for _, f := range st {
				name := doc.Shared.Frames[f].Name
				if !seen[name] {
					seen[name] = true
					total[name] += w
				}
			}
		}
		if sum != len(threads[i].Samples) || p.Name != groupLabel(analyze.GroupThread, &threads[i]) {
			t.Errorf("profile %d %q: %d samples, thread %s has %d", i, p.Name, sum, threads[i].Key, len(threads[i].Samples))
		}
	}
	if n != len(v.Samples) {
		t.Errorf("%d samples, want %d", n, len(v.Samples))
	}
	rself, rtotal := map[string]int{}, map[string]int{}
	for _, s := range v.Top(v.Samples) {
		name := string([]rune(s.Name)) // as JSON has it: U+FFFD per invalid byte
		if s.Self > 0 {
			rself[name] += s.Self
		}
		rtotal[name] += s.Total
	}
	for name := range rtotal {
		if self[name] != rself[name] || total[name] != rtotal[name] {
			t.Errorf("%q: speedscope self %d total %d, report %d %d", name, self[name], total[name], rself[name], rtotal[name])
		}
	}
	for _, f := range doc.Shared.Frames {
		if f.Name == "hot" && f.File != "server" {
			t.Errorf("frame %+v: want the DSO as file", f)
		}
	}
	// Grouped by process: two profiles.
	if ps := checkSpeedscope(t, generate(t, v, FormatSpeedscope, Options{By: analyze.GroupProcess})); len(ps) != 2 {
		t.Errorf("%d profiles by process", len(ps))
	}
}
