package export

import (
	"bytes"
	"encoding/json"
	"testing"

	"nsprof/analyze"
	"nsprof/capture"
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
		if sum != len(threads[i].Samples) || p.Name != ssProfileName(analyze.GroupThread, &threads[i]) {
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

// TestSpeedscopeTime: a recording of cpu-clock at a known frequency gives
// speedscope profiles in nanoseconds, each sample weighing its period,
// named with the thread's pid and tid.
func TestSpeedscopeTime(t *testing.T) {
	v := cpuClockView(t)
	data := generate(t, v, FormatSpeedscope, Options{})
	testutils.CheckSpeedscope(t, data)
	var doc struct {
		Profiles []struct {
			Name     string  `json:"name"`
			Unit     string  `json:"unit"`
			EndValue int64   `json:"endValue"`
			Weights  []int64 `json:"weights"`
		} `json:"profiles"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Profiles) != 1 {
		t.Fatalf("%d profiles, want 1", len(doc.Profiles))
	}
	pr := doc.Profiles[0]
	var sum int64
	for _, w := range pr.Weights {
		sum += w
	}
	if pr.Unit != "nanoseconds" || sum != 3*250_000 || pr.EndValue != sum {
		t.Errorf("unit %q, weights %v (sum %d), endValue %d; want nanoseconds, 3 samples of 250000 ns", pr.Unit, pr.Weights, sum, pr.EndValue)
	}
	if pr.Name != "server [pid 10 tid 13]" {
		t.Errorf("profile name %q, want \"server [pid 10 tid 13]\"", pr.Name)
	}
}

// cpuClockView returns the view of a capture of cpu-clock samples at
// 4000 Hz (250 us each) of thread 13 of process 10, "server": three
// samples, two on one stack.
func cpuClockView(t *testing.T) *analyze.View {
	t.Helper()
	var buf bytes.Buffer
	w, err := capture.NewWriter(&buf)
	if err != nil {
		t.Fatal(err)
	}
	h := capture.FrameHeader{PID: 10, Time: 1, CPU: -1}
	for _, f := range []capture.Frame{
		&capture.Metadata{FrameHeader: h, ID: capture.MetaEvent, Value: "cpu-clock"},
		&capture.Metadata{FrameHeader: h, ID: capture.MetaFrequency, Value: "4000"},
		&capture.Process{FrameHeader: h, Cmdline: "server"},
		&capture.Sample{FrameHeader: h, TID: 13, Addrs: []uint64{0x401000}},
		&capture.Sample{FrameHeader: h, TID: 13, Addrs: []uint64{0x401000}},
		&capture.Sample{FrameHeader: h, TID: 13, Addrs: []uint64{0x402000, 0x401000}},
	} {
		if err := w.WriteFrame(f); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	p, err := analyze.LoadBytes(buf.Bytes(), analyze.LoadOptions{NoHostFiles: true})
	if err != nil {
		t.Fatal(err)
	}
	v, err := p.View(analyze.ViewOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return v
}
