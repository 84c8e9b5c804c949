package export

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"io"
	"strings"
	"testing"

	"github.com/google/pprof/profile"

	"nsprof/analyze"
	"nsprof/internal/testcaptures"
)

// memAllocs are the synthetic heap's allocations: stack leaf first,
// size, count, and how many of them are freed.
var memAllocs = []testcaptures.Alloc{
	{PID: 10, Frames: []string{"alloc_a", "main"}, Size: 100, N: 3, Freed: 2},
	{PID: 10, Frames: []string{"alloc_b", "work", "main"}, Size: 5000, N: 1, Freed: 1},
	{PID: 10, Frames: []string{hostile[0], "main"}, Size: 7, N: 1},
	{PID: 20, Frames: []string{hostile[6], "main"}, Size: 10, N: 2, Freed: 2},
}

// writeMemCapture writes a capture of memAllocs as Sysprof ALLOCATION
// frames (frees with size 0), named by a symbol bundle.
func writeMemCapture(t testing.TB) []byte {
	t.Helper()
	return testcaptures.MemoryOf(t, memAllocs)
}

func loadTestMemory(t testing.TB) *analyze.Profile {
	t.Helper()
	p, err := analyze.Load(bytes.NewReader(writeMemCapture(t)), analyze.LoadOptions{NoHostFiles: true})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// generateMemory exports the allocations of p weighed by the sample type
// named value, selected and shaped by vo.
func generateMemory(t testing.TB, p *analyze.Profile, f Format, value string, vo analyze.ViewOptions, o Options) []byte {
	t.Helper()
	i, err := p.ValueIndex(value)
	if err != nil {
		t.Fatal(err)
	}
	vo.Value = i
	v, err := p.View(vo)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := Generate(&buf, v, f, o); err != nil {
		t.Fatalf("%v: %v", f, err)
	}
	return buf.Bytes()
}

// TestPprofMemory checks the heap profile's sample types, default, and
// per-function flat values of every type against the allocations
// written, labels and mappings.
func TestPprofMemory(t *testing.T) {
	p := loadTestMemory(t)
	pp, err := profile.Parse(bytes.NewReader(generateMemory(t, p, FormatPprof, "alloc_space", analyze.ViewOptions{}, Options{})))
	if err != nil {
		t.Fatal(err)
	}
	if err := pp.CheckValid(); err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, st := range pp.SampleType {
		types = append(types, st.Type+"/"+st.Unit)
	}
	if got := strings.Join(types, " "); got != "alloc_objects/count alloc_space/bytes inuse_objects/count inuse_space/bytes temp_objects/count temp_space/bytes" || pp.DefaultSampleType != "alloc_space" {
		t.Errorf("sample types %s, default %q", got, pp.DefaultSampleType)
	}
	if pp.PeriodType == nil || pp.PeriodType.Type != "space" || pp.Period != 1 {
		t.Errorf("period %v %d", pp.PeriodType, pp.Period)
	}
	got := map[string][6]int64{}
	for _, s := range pp.Sample {
		fn := s.Location[0].Line[0].Function.Name
		v := got[fn]
		for i := range v {
			v[i] += s.Value[i]
		}
		got[fn] = v
		pid := s.NumLabel["pid"]
		if len(pid) != 1 || (pid[0] == 10) != (s.Label["comm"][0] == "server") {
			t.Errorf("labels %v %v", s.Label, s.NumLabel)
		}
		for _, l := range s.Location {
			if l.Mapping == nil || l.Address < l.Mapping.Start || l.Address >= l.Mapping.Limit {
				t.Errorf("location %#x mapping %+v", l.Address, l.Mapping)
			}
		}
	}
	want := map[string][6]int64{}
	for _, a := range memAllocs {
		v := want[a.Frames[0]]
		live := int64(a.N - a.Freed)
		v[0] += int64(a.N)
		v[1] += int64(a.N) * a.Size
		v[2] += live
		v[3] += live * a.Size
		v[4] += int64(a.Freed) // each freed at once by its thread: temporary
		v[5] += int64(a.Freed) * a.Size
		want[a.Frames[0]] = v
	}
	if len(got) != len(want) {
		t.Errorf("functions %v, want %v", got, want)
	}
	for fn, w := range want {
		if got[fn] != w {
			t.Errorf("%q: alloc_objects, alloc_space, inuse_objects, inuse_space, temp_objects, temp_space %v, want %v", fn, got[fn], w)
		}
	}
	if pp.Mapping[0].File != "/usr/bin/server" {
		t.Errorf("first mapping %q, want the process that allocated most", pp.Mapping[0].File)
	}
	// The CPU export of the same capture has no samples: the two
	// coexist without mixing.
	v, err := p.View(analyze.ViewOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(v.Samples) != 0 {
		t.Errorf("%d CPU samples from ALLOCATION frames", len(v.Samples))
	}
}

// TestFoldedMemory checks folded stacks weighed by each value, grouping
// and inversion.
func TestFoldedMemory(t *testing.T) {
	p := loadTestMemory(t)
	for _, tc := range []struct {
		value string
		vo    analyze.ViewOptions
		o     Options
		want  []string
	}{
		{"alloc_space", analyze.ViewOptions{}, Options{}, []string{"main;alloc_a 300", "main;work;alloc_b 5000", "main;semi:colon 20"}},
		{"alloc_objects", analyze.ViewOptions{}, Options{}, []string{"main;alloc_a 3", "main;work;alloc_b 1", "main;semi:colon 2"}},
		{"inuse_space", analyze.ViewOptions{}, Options{}, []string{"main;alloc_a 100", "main;" + hostile[0] + " 7"}},
		{"inuse_objects", analyze.ViewOptions{Invert: true}, Options{}, []string{"alloc_a;main 1", hostile[0] + ";main 1"}},
		{"alloc_space", analyze.ViewOptions{}, Options{By: analyze.GroupProcess}, []string{"server [pid 10];main;alloc_a 300", "evil [pid 20];main;semi:colon 20"}},
		{"alloc_space", analyze.ViewOptions{}, Options{By: analyze.GroupThread}, []string{"server [tid 10];main;alloc_a 300", "evil [tid 20];main;semi:colon 20"}},
		{"alloc_space", analyze.ViewOptions{Filter: analyze.Filter{PIDs: []int32{20}}}, Options{}, []string{"main;semi:colon 20"}},
	} {
		out := string(generateMemory(t, p, FormatFolded, tc.value, tc.vo, tc.o))
		for _, w := range tc.want {
			if !strings.Contains(out, w+"\n") {
				t.Errorf("%v %+v by=%v: no %q in\n%s", tc.value, tc.vo, tc.o.By, w, out)
			}
		}
		if tc.value == "inuse_space" && strings.Contains(out, "alloc_b") {
			t.Errorf("freed block in use:\n%s", out)
		}
		if len(tc.vo.Filter.PIDs) > 0 && strings.Contains(out, "alloc_a") {
			t.Errorf("pid 10's allocations kept by a selection of pid 20:\n%s", out)
		}
	}
}

// TestSpeedscopeAndSVGMemory checks that the speedscope document parses
// with byte weights summing to the bytes allocated, and that the SVG is
// well-formed XML counting bytes.
func TestSpeedscopeAndSVGMemory(t *testing.T) {
	p := loadTestMemory(t)
	var doc struct {
		Shared struct {
			Frames []struct{ Name string } `json:"frames"`
		} `json:"shared"`
		Profiles []struct {
			Type, Unit, Name string
			EndValue         int64   `json:"endValue"`
			Samples          [][]int `json:"samples"`
			Weights          []int64 `json:"weights"`
		} `json:"profiles"`
	}
	if err := json.Unmarshal(generateMemory(t, p, FormatSpeedscope, "alloc_space", analyze.ViewOptions{}, Options{}), &doc); err != nil {
		t.Fatal(err)
	}
	var sum int64
	for _, pr := range doc.Profiles {
		if pr.Type != "sampled" || pr.Unit != "bytes" || len(pr.Samples) != len(pr.Weights) {
			t.Errorf("profile %s: type %s unit %s, %d samples %d weights", pr.Name, pr.Type, pr.Unit, len(pr.Samples), len(pr.Weights))
		}
		var ps int64
		for i, w := range pr.Weights {
			ps += w
			s := pr.Samples[i]
			if len(s) == 0 || doc.Shared.Frames[s[0]].Name != "main" {
				t.Errorf("sample %v does not start at main", s)
			}
		}
		if ps != pr.EndValue {
			t.Errorf("profile %s: weights %d, endValue %d", pr.Name, ps, pr.EndValue)
		}
		sum += ps
	}
	if len(doc.Profiles) != 2 || sum != 300+5000+7+20 {
		t.Errorf("%d profiles, %d bytes, want 2 and 5327", len(doc.Profiles), sum)
	}
	svg := generateMemory(t, p, FormatSVG, "alloc_space", analyze.ViewOptions{}, Options{})
	dec := xml.NewDecoder(bytes.NewReader(svg))
	for {
		if _, err := dec.Token(); err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("SVG is not well-formed XML: %v", err)
		}
	}
	if !strings.Contains(string(svg), "<title>all: 5327 bytes, 100.00%</title>") {
		t.Errorf("SVG root does not count the 5327 bytes")
	}
}
