package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/pprof/profile"

	"nsprof/analyze"
	"nsprof/internal/testcaptures"
)

// valueReport is the part of report --json the value tests read.
type valueReport struct {
	Selected   int                `json:"selected"`
	SampleType *analyze.ValueType `json:"sample_type"`
	Groups     []struct {
		Key       string             `json:"key"`
		Value     int64              `json:"value"`
		Functions []analyze.FuncStat `json:"functions"`
		Tree      *analyze.Node      `json:"tree"`
	} `json:"groups"`
}

// sum returns the groups' values added up.
func (r *valueReport) sum() int64 {
	var n int64
	for _, g := range r.Groups {
		n += g.Value
	}
	return n
}

// TestMemoryValueViews: a --memprof capture's allocations go through
// every selection, grouping and view of report and every export format,
// weighed by bytes (--value alloc_space, or --memory as its shorthand),
// and the figures add up to those of a plain replay of its ALLOCATION
// frames.
func TestMemoryValueViews(t *testing.T) {
	data := testcaptures.Memprof(t)
	capPath := filepath.Join(t.TempDir(), "mem.syscap")
	if err := os.WriteFile(capPath, data, 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := analyze.Load(bytes.NewReader(data), analyze.LoadOptions{NoHostFiles: true})
	if err != nil {
		t.Fatal(err)
	}
	m := testcaptures.ReplayHeap(t, data)
	total, leaked := m.Bytes, m.LeakBytes
	if total == 0 || leaked == 0 || len(p.Processes) < 2 {
		t.Fatalf("capture: %d bytes allocated, %d leaked, %d processes", total, leaked, len(p.Processes))
	}
	report := func(t *testing.T, args ...string) valueReport {
		t.Helper()
		out, stderr, status := nsprof(t, nil, append([]string{"report", capPath, "--json"}, args...)...)
		if status != 0 {
			t.Fatalf("report %q: status %d\n%s", args, status, stderr)
		}
		var r valueReport
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatalf("report %q: %v\n%s", args, err, out)
		}
		if r.SampleType == nil || r.SampleType.Type != "alloc_space" || r.SampleType.Unit != "bytes" {
			t.Fatalf("report %q: sample type %+v, want alloc_space in bytes", args, r.SampleType)
		}
		return r
	}

	t.Run("all", func(t *testing.T) {
		for _, args := range [][]string{
			{"--memory"}, {"--value", "alloc_space"}, {"--memory", "--comm", "memprof"},
			{"--memory", "--container", "host"}, {"--memory", "--hide-kernel"}, {"--memory", "--by", "process"},
		} {
			if r := report(t, args...); r.sum() != total {
				t.Errorf("report %q: %d bytes, want %d", args, r.sum(), total)
			}
		}
		if r := report(t, "--memory", "--comm", "^nosuch$"); r.Selected != 0 || r.sum() != 0 {
			t.Errorf("--comm ^nosuch$: %d samples of %d bytes selected", r.Selected, r.sum())
		}
		if r := report(t, "--memory", "--container", "podman"); r.Selected != 0 {
			t.Errorf("--container podman: %d samples selected", r.Selected)
		}
	})
	t.Run("by", func(t *testing.T) {
		r := report(t, "--memory", "--by", "thread")
		if len(r.Groups) < 2 || r.sum() != total {
			t.Errorf("--by thread: %d groups of %d bytes, want 2 or more of %d", len(r.Groups), r.sum(), total)
		}
		for _, g := range r.Groups {
			var self int64
			for _, f := range g.Functions {
				self += int64(f.Self)
			}
			if self != g.Value {
				t.Errorf("--by thread, group %s: self bytes add up to %d, the group's value is %d", g.Key, self, g.Value)
			}
		}
		pid := p.Processes[len(p.Processes)-1].PID
		r = report(t, "--memory", "--pid", strconv.Itoa(int(pid)))
		if want := testcaptures.ReplayHeap(t, data, pid).Bytes; r.sum() != want || want == 0 {
			t.Errorf("--pid %d: %d bytes, want %d", pid, r.sum(), want)
		}
	})
	t.Run("focus", func(t *testing.T) {
		r := report(t, "--memory", "--focus", "main", "--tree")
		v := r.sum()
		if v <= 0 || v >= total {
			t.Fatalf("--focus main: %d bytes, want some of %d", v, total)
		}
		root := r.Groups[0].Tree
		if len(root.Children) != 1 || root.Children[0].Name != "main" || int64(root.Children[0].Total) != v {
			t.Errorf("--focus main: tree %+v, want main at the root with %d bytes", root, v)
		}
	})
	t.Run("tree-depth", func(t *testing.T) {
		r := report(t, "--memory", "--tree", "--depth", "2", "--min-percent", "0")
		root := r.Groups[0].Tree
		if int64(root.Total) != total {
			t.Errorf("tree total %d, want %d", root.Total, total)
		}
		root.Walk(func(n *analyze.Node, depth int) bool {
			if depth > 2 {
				t.Errorf("--depth 2: %s at depth %d", n.Name, depth)
			}
			return true
		})
		if out, _, status := nsprof(t, nil, "report", capPath, "--memory", "--bottom-up", "--depth", "3"); status != 0 || !strings.Contains(out, "value alloc_space (bytes)") {
			t.Errorf("--memory --bottom-up: status %d\n%s", status, out)
		}
	})
	t.Run("since-until", func(t *testing.T) {
		mid := midAllocTime(p)
		before, after := report(t, "--memory", "--until", mid), report(t, "--memory", "--since", mid)
		if before.sum() <= 0 || after.sum() <= 0 || before.sum()+after.sum() != total {
			t.Errorf("--until %s: %d bytes, --since %[1]s: %d bytes; want both, adding up to %d", mid, before.sum(), after.sum(), total)
		}
	})
	t.Run("export", func(t *testing.T) {
		export := func(t *testing.T, args ...string) string {
			t.Helper()
			out, stderr, status := nsprof(t, nil, append([]string{"export", capPath}, args...)...)
			if status != 0 {
				t.Fatalf("export %q: status %d\n%s", args, status, stderr)
			}
			return out
		}
		for _, args := range [][]string{
			{"--memory", "--comm", "memprof"}, {"--value", "alloc_space", "--by", "thread"}, {"--memory", "--hide-kernel", "--container", "host"},
		} {
			folded := export(t, append(args, "--format", "folded")...)
			if n := foldedSum(t, folded); n != total {
				t.Errorf("folded %q: %d bytes, want %d", args, n, total)
			}
			var ss struct {
				Profiles []struct {
					Unit    string  `json:"unit"`
					Weights []int64 `json:"weights"`
				} `json:"profiles"`
			}
			if err := json.Unmarshal([]byte(export(t, append(args, "--format", "speedscope")...)), &ss); err != nil {
				t.Fatal(err)
			}
			var n int64
			for _, pr := range ss.Profiles {
				if pr.Unit != "bytes" {
					t.Errorf("speedscope %q: unit %q", args, pr.Unit)
				}
				for _, w := range pr.Weights {
					n += w
				}
			}
			if n != total {
				t.Errorf("speedscope %q: %d bytes, want %d", args, n, total)
			}
			if svg := export(t, append(args, "--format", "svg")...); !strings.Contains(svg, strconv.FormatInt(total, 10)+" bytes") {
				t.Errorf("svg %q: no %d bytes at the root", args, total)
			}
		}
		for _, c := range []struct {
			value string
			want  int64
		}{{"alloc_space", total}, {"inuse_space", leaked}} {
			pp, err := profile.Parse(strings.NewReader(export(t, "--value", c.value, "--comm", "memprof", "--format", "pprof")))
			if err != nil {
				t.Fatal(err)
			}
			var types []string
			for _, st := range pp.SampleType {
				types = append(types, st.Type)
			}
			if strings.Join(types, " ") != "alloc_objects alloc_space inuse_objects inuse_space temp_objects temp_space" || pp.DefaultSampleType != c.value {
				t.Errorf("pprof --value %s: sample types %q, default %q", c.value, types, pp.DefaultSampleType)
			}
			i := slices.Index(types, c.value)
			var n int64
			for _, s := range pp.Sample {
				n += s.Value[i]
			}
			if n != c.want {
				t.Errorf("pprof --value %s: %d bytes, want %d", c.value, n, c.want)
			}
		}
		if n := foldedSum(t, export(t, "--value", "inuse_space", "--by", "process", "--format", "folded")); n != leaked {
			t.Errorf("folded --value inuse_space: %d bytes, want %d", n, leaked)
		}
	})
	t.Run("memory-view", func(t *testing.T) {
		// The text heap profile takes every selection too: its function
		// table's self bytes add up to the bytes selected.
		view := func(t *testing.T, args ...string) (int64, string) {
			t.Helper()
			out, stderr, status := nsprof(t, nil, append([]string{"report", capPath, "--memory", "--limit", "0"}, args...)...)
			if status != 0 {
				t.Fatalf("report --memory %q: status %d\n%s", args, status, stderr)
			}
			var n int64
			for _, r := range memTop(t, out) {
				n += r.selfBytes
			}
			return n, out
		}
		if n, _ := view(t); n != total {
			t.Errorf("--memory: %d bytes, want %d", n, total)
		}
		for _, args := range [][]string{{"--comm", "memprof"}, {"--container", "host"}, {"--hide-kernel"}} {
			if n, _ := view(t, args...); n != total {
				t.Errorf("--memory %q: %d bytes, want %d", args, n, total)
			}
		}
		pid := p.Processes[len(p.Processes)-1].PID
		if n, out := view(t, "--pid", strconv.Itoa(int(pid))); n != testcaptures.ReplayHeap(t, data, pid).Bytes {
			t.Errorf("--memory --pid %d: %d bytes, want %d\n%s", pid, n, testcaptures.ReplayHeap(t, data, pid).Bytes, out)
		}
		mid := midAllocTime(p)
		before, _ := view(t, "--until", mid)
		after, out := view(t, "--since", mid)
		if before <= 0 || after <= 0 || before+after != total {
			t.Errorf("--memory --until/--since %s: %d and %d bytes, want both, adding up to %d", mid, before, after, total)
		}
		if !strings.Contains(out, "selected ") {
			t.Errorf("--memory --since: the view does not say it is a selection:\n%s", out)
		}
		focus, out := view(t, "--focus", "main")
		if focus <= 0 || focus >= total {
			t.Errorf("--memory --focus main: %d bytes, want some of %d", focus, total)
		}
		if _, tree, _ := strings.Cut(out, "Call tree by bytes allocated\n"); !strings.HasPrefix(strings.TrimLeft(tree, " 0123456789.%"), "main (") {
			t.Errorf("--memory --focus main: the tree does not start at main:\n%s", tree)
		}
		if n, _ := view(t, "--comm", "^nosuch$"); n != 0 {
			t.Errorf("--memory --comm ^nosuch$: %d bytes", n)
		}
	})
	t.Run("errors", func(t *testing.T) {
		if _, stderr, status := nsprof(t, nil, "report", capPath, "--memory", "--value", "cpu"); status != 2 || !strings.Contains(stderr, "not an allocation type") {
			t.Errorf("--memory --value cpu: status %d\n%s", status, stderr)
		}
		if _, stderr, status := nsprof(t, nil, "export", capPath, "--memory", "--memory-value", "bytes", "--format", "folded"); status != 2 || !strings.Contains(stderr, "not an allocation type") {
			t.Errorf("--memory-value bytes: status %d\n%s", status, stderr)
		}
		cpu := filepath.Join(t.TempDir(), "cpu.syscap")
		if err := os.WriteFile(cpu, testcaptures.CPU(t), 0o644); err != nil {
			t.Fatal(err)
		}
		if out, stderr, status := nsprof(t, nil, "report", cpu, "--memory"); status != 0 || !strings.Contains(out, "has no allocations") {
			t.Errorf("report --memory of a CPU capture: status %d\n%s%s", status, out, stderr)
		}
		if out, stderr, status := nsprof(t, nil, "export", cpu, "--memory", "--format", "folded"); status != 1 || out != "" || !strings.Contains(stderr, "has no allocations") {
			t.Errorf("export --memory of a CPU capture: status %d\n%s%s", status, out, stderr)
		}
		if _, stderr, status := nsprof(t, nil, "report", capPath, "--value", "off_cpu"); status != 1 || !strings.Contains(stderr, `sample type "off_cpu"`) {
			t.Errorf("--value off_cpu: status %d\n%s", status, stderr)
		}
	})
}

// midAllocTime returns the time of p's median allocation from its start,
// as --since/--until take it.
func midAllocTime(p *analyze.Profile) string {
	var times []int64
	for i := range p.Samples {
		if s := &p.Samples[i]; p.Value(s, 2) > 0 {
			times = append(times, s.Time-p.Start)
		}
	}
	slices.Sort(times)
	return fmt.Sprintf("%dns", times[len(times)/2])
}

// foldedSum adds up the counts of folded stacks.
func foldedSum(t *testing.T, folded string) int64 {
	t.Helper()
	var n int64
	for _, c := range foldedCounts(t, folded) {
		n += c
	}
	return n
}
