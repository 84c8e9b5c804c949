package testutils

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"testing"
)

// CheckSpeedscope checks a document against speedscope's file format
// schema (file-format-schema.json of speedscope 1.25, written out here as
// Go): the required fields and their types, the constants and enums, and
// what speedscope's importer relies on beyond the schema (frame indices
// in range, one weight per sample). It returns the sampled profiles.
func CheckSpeedscope(t testing.TB, data []byte) []map[string]any {
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
