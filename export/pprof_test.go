package export

import (
	"bytes"
	"testing"

	"github.com/google/pprof/profile"

	"nsprof/analyze"
	"nsprof/internal/testcaptures"
)

// TestPprof writes the synthetic capture as pprof, parses it back and
// checks it against the report numbers: per-function self and total
// samples, labels, mappings with build-ids, the kernel mapping.
func TestPprof(t *testing.T) {
	v := loadTestView(t, analyze.ViewOptions{})
	out := generate(t, v, FormatPprof, Options{Title: "test"})
	p, err := profile.Parse(bytes.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.CheckValid(); err != nil {
		t.Fatal(err)
	}
	if len(p.SampleType) != 1 || p.SampleType[0].Type != "samples" || p.DurationNanos != 10e6 || p.TimeNanos == 0 {
		t.Errorf("header: %v, duration %d, time %d", p.SampleType, p.DurationNanos, p.TimeNanos)
	}
	self, total, n := map[string]int{}, map[string]int{}, 0
	for _, s := range p.Sample {
		c := int(s.Value[0])
		n += c
		self[s.Location[0].Line[0].Function.Name] += c
		seen := map[string]bool{}
		for _, l := range s.Location {
			if len(l.Line) != 1 {
				t.Fatalf("location %d has %d lines", l.ID, len(l.Line))
			}
			name := l.Line[0].Function.Name
			if !seen[name] {
				seen[name] = true
				total[name] += c
			}
		}
		pid, tid := s.NumLabel["pid"], s.NumLabel["tid"]
		if len(pid) != 1 || len(tid) != 1 {
			t.Fatalf("labels %v %v", s.Label, s.NumLabel)
		}
		switch pid[0] {
		case 10:
			if s.Label["comm"][0] != "server" || s.Label["container"][0] != "podman:web (abcdef012345)" || s.NumLabel["nspid"][0] != 1 {
				t.Errorf("pid 10 labels %v %v", s.Label, s.NumLabel)
			}
		case 20:
			if s.Label["comm"][0] != "evil" || s.Label["container"][0] != "host" {
				t.Errorf("pid 20 labels %v %v", s.Label, s.NumLabel)
			}
		default:
			t.Errorf("pid %d", pid[0])
		}
	}
	if n != len(v.Samples) {
		t.Errorf("%d samples, want %d", n, len(v.Samples))
	}
	// By name: "main" of both binaries is one name.
	rself, rtotal := map[string]int{}, map[string]int{}
	for _, s := range v.Top(v.Samples) {
		rself[s.Name] += s.Self
		rtotal[s.Name] += s.Total
	}
	for name := range rtotal {
		if self[name] != rself[name] || total[name] != rtotal[name] {
			t.Errorf("%q: pprof self %d total %d, report %d %d", name, self[name], total[name], rself[name], rtotal[name])
		}
	}
	var server, kernel *profile.Mapping
	for _, m := range p.Mapping {
		switch m.File {
		case "/usr/bin/server":
			server = m
		case kernelMapping:
			kernel = m
		}
	}
	if server == nil || server.BuildID != "0123abcd" || server.Start != 0x400000 || server.Limit != 0x500000 || server.Offset != 0x1000 || !server.HasFunctions {
		t.Errorf("server mapping %+v", server)
	}
	if kernel == nil || kernel.Start > 0xffffffff81000010 || kernel.Limit <= 0xffffffff81000010 {
		t.Errorf("kernel mapping %+v", kernel)
	}
	for _, l := range p.Location {
		if l.Mapping == nil {
			t.Errorf("location %#x has no mapping", l.Address)
		} else if l.Address < l.Mapping.Start || l.Address >= l.Mapping.Limit {
			t.Errorf("location %#x outside its mapping %+v", l.Address, l.Mapping)
		}
	}
	// Distinct (stack, thread) pairs are one sample each.
	if len(p.Sample) != 7 {
		t.Errorf("%d pprof samples, want 7", len(p.Sample))
	}
}

// TestPprofKernelBuildID: the kernel's mapping carries the build-id of
// the kernel notes nsprof record embeds, and none without them.
func TestPprofKernelBuildID(t *testing.T) {
	for _, tc := range []struct {
		data []byte
		want string
	}{
		{testcaptures.CPUWithNotes(t, testStacks), testcaptures.KernelBuildID},
		{testcaptures.CPUOf(t, testStacks), ""},
	} {
		p, err := analyze.Load(bytes.NewReader(tc.data), analyze.LoadOptions{NoHostFiles: true})
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Warnings) > 0 {
			t.Errorf("warnings %q", p.Warnings)
		}
		v, err := p.View(analyze.ViewOptions{})
		if err != nil {
			t.Fatal(err)
		}
		pp, err := Pprof(v, Options{})
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, m := range pp.Mapping {
			if m.File == kernelMapping {
				n++
				if m.BuildID != tc.want {
					t.Errorf("kernel mapping build-id %q, want %q", m.BuildID, tc.want)
				}
			}
		}
		if n != 1 {
			t.Errorf("%d kernel mappings, want 1", n)
		}
	}
}
