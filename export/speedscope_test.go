package export

import (
	"encoding/json"
	"testing"

	"nsprof/analyze"
	"nsprof/internal/testutils"
)

func TestSpeedscope(t *testing.T) {
	v := loadTestView(t, analyze.ViewOptions{})
	data := generate(t, v, FormatSpeedscope, Options{Title: "t"})
	profiles := testutils.CheckSpeedscope(t, data)
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
	if ps := testutils.CheckSpeedscope(t, generate(t, v, FormatSpeedscope, Options{By: analyze.GroupProcess})); len(ps) != 2 {
		t.Errorf("%d profiles by process", len(ps))
	}
}
