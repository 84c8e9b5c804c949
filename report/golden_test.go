package report

import (
	"bytes"
	"flag"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"nsprof/analyze"
	"nsprof/internal/testcaptures"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

// goldenCapture is a capture of the golden tests, loaded for every view.
type goldenCapture struct {
	name string
	view *analyze.View
	// mem is the view weighing alloc_space, for the memory view; view
	// when the capture has no allocations.
	mem *analyze.View
	tl  *analyze.Timeline
}

// loadGolden loads a capture as `nsprof report` does, but without host
// files, so the names come from the capture alone on any host.
func loadGolden(t *testing.T, name string, data []byte, vo analyze.ViewOptions) goldenCapture {
	t.Helper()
	p, err := analyze.Load(bytes.NewReader(data), analyze.LoadOptions{NoHostFiles: true, Timeline: true})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	v, err := p.View(vo)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	m := v
	if i, err := p.ValueIndex(analyze.AllocSpaceType.Type); err == nil {
		mo := vo
		mo.Value = i
		if m, err = p.View(mo); err != nil {
			t.Fatalf("%s: memory: %v", name, err)
		}
	}
	return goldenCapture{name, v, m, p.Timeline}
}

// goldenCaptures are the captures every view is rendered from: nsprof's
// CPU samples, a --memprof heap, a timeline of marks, counters and logs,
// Sysprof's own sysprof-cli capture, and a --memprof capture nsprof
// recorded.
func goldenCaptures(t *testing.T) []goldenCapture {
	return []goldenCapture{
		loadGolden(t, "cpu", testcaptures.CPU(t), analyze.ViewOptions{Inline: true}),
		loadGolden(t, "memprof", testcaptures.Memory(t), analyze.ViewOptions{Inline: true}),
		loadGolden(t, "timeline", testcaptures.Timeline(t), analyze.ViewOptions{Inline: true}),
		loadGolden(t, "sysprof-cli", testcaptures.Sysprof(t), analyze.ViewOptions{Inline: true}),
		loadGolden(t, "nsprof-memprof", testcaptures.Memprof(t), analyze.ViewOptions{Inline: true}),
	}
}

// cliDefaults are the options `nsprof report` passes when not writing to
// a terminal and given no flags.
var cliDefaults = Options{Depth: 8, MinPercent: 0.5}

// TestGoldenViews renders every view of every golden capture, as text and
// as JSON (the memory view is text only), with the command's defaults,
// and compares each with testdata/golden/CAPTURE.VIEW.FORMAT.
func TestGoldenViews(t *testing.T) {
	for _, c := range goldenCaptures(t) {
		for v := ViewTop; v <= ViewSummary; v++ {
			for _, f := range []Format{Text, JSON} {
				if v == ViewMemory && f == JSON {
					continue
				}
				name := fmt.Sprintf("%s.%v.%s", c.name, v, formatExt(f))
				t.Run(name, func(t *testing.T) {
					o := cliDefaults
					o.View, o.Format, o.File = v, f, c.name+".syscap"
					if c.name == "sysprof-cli" {
						o.Limit = 30 // keeps the files small; the options tests cover Limit 0
					}
					var buf bytes.Buffer
					d := Data{View: c.view, Timeline: c.tl}
					if v == ViewMemory {
						d.View = c.mem
					}
					if err := Generate(&buf, d, o); err != nil {
						t.Fatal(err)
					}
					testcaptures.Golden(t, filepath.Join("testdata", "golden", name), buf.Bytes(), *update)
				})
			}
		}
	}
}

func formatExt(f Format) string {
	if f == JSON {
		return "json"
	}
	return "txt"
}

// TestGoldenOptions renders the CPU, memory and timeline captures with
// the options that change the views: grouping, sorting, limits, a
// terminal's width, selections, depth and damage.
func TestGoldenOptions(t *testing.T) {
	cpu := testcaptures.CPU(t)
	for _, tc := range []struct {
		name string
		data []byte
		vo   analyze.ViewOptions
		o    Options
	}{
		{"cpu.top.by-process", cpu, analyze.ViewOptions{}, Options{By: analyze.GroupProcess}},
		{"cpu.top.by-thread", cpu, analyze.ViewOptions{}, Options{By: analyze.GroupThread}},
		{"cpu.top.by-container", cpu, analyze.ViewOptions{}, Options{By: analyze.GroupContainer}},
		{"cpu.top.by-dso", cpu, analyze.ViewOptions{}, Options{By: analyze.GroupDSO}},
		{"cpu.top.by-dso.hide-kernel.json", cpu, analyze.ViewOptions{HideKernel: true}, Options{By: analyze.GroupDSO, Format: JSON, Limit: 2}},
		{"cpu.top.by-comm.json", cpu, analyze.ViewOptions{}, Options{By: analyze.GroupComm, Format: JSON}},
		{"cpu.top.sort-total.limit-3", cpu, analyze.ViewOptions{}, Options{SortTotal: true, Limit: 3}},
		{"cpu.top.width-50", cpu, analyze.ViewOptions{}, Options{Width: 50, Limit: 4}},
		{"cpu.tree.width-40", cpu, analyze.ViewOptions{}, Options{View: ViewTree, Width: 40}},
		{"cpu.tree.depth-2", cpu, analyze.ViewOptions{}, Options{View: ViewTree, Depth: 2}},
		{"cpu.tree.hide-kernel.focus", cpu, analyze.ViewOptions{HideKernel: true, Focus: "work"}, Options{View: ViewTree}},
		{"cpu.bottom-up.by-process.json", cpu, analyze.ViewOptions{}, Options{View: ViewBottomUp, By: analyze.GroupProcess, Format: JSON}},
		{"cpu.top.pid-20.since", cpu, analyze.ViewOptions{Filter: analyze.Filter{PIDs: []int32{20}, Since: 4 * time.Millisecond}}, Options{}},
		{"cpu.top.damage.json", cpu, analyze.ViewOptions{}, Options{Format: JSON, Damage: fmt.Errorf("cpu.syscap: capture: truncated frame at offset 1234")}},
		{"memprof.memory.depth-1.limit-1", testcaptures.Memory(t), analyze.ViewOptions{}, Options{View: ViewMemory, Depth: 1, Limit: 1}},
		{"memprof.memory.damage", testcaptures.Memory(t), analyze.ViewOptions{}, Options{View: ViewMemory, Damage: fmt.Errorf("memprof.syscap: capture: truncated frame at offset 99")}},
		{"timeline.marks.pid-40.until", testcaptures.Timeline(t), analyze.ViewOptions{Filter: analyze.Filter{PIDs: []int32{40}, Until: 2500 * time.Microsecond}}, Options{View: ViewMarks}},
		{"timeline.counters.since.width-60", testcaptures.Timeline(t), analyze.ViewOptions{Filter: analyze.Filter{Since: 3 * time.Millisecond}}, Options{View: ViewCounters, Width: 60}},
		{"timeline.logs.pid-41.json", testcaptures.Timeline(t), analyze.ViewOptions{Filter: analyze.Filter{PIDs: []int32{41}}}, Options{View: ViewLogs, Format: JSON}},
		// A Podman container shows its name and id prefix, an id prefix
		// still selects it, and JSON has its full id.
		{"cpu.top.by-container.container-abcdef01.json", cpu, analyze.ViewOptions{Filter: analyze.Filter{Container: "abcdef01"}}, Options{By: analyze.GroupContainer, Format: JSON}},
		// Instrumented calls: gprof's flat profile and call graph.
		{"calls.calls", testcaptures.Calls(t), analyze.ViewOptions{AllKinds: true}, Options{View: ViewCalls}},
		{"calls.calls.json", testcaptures.Calls(t), analyze.ViewOptions{AllKinds: true}, Options{View: ViewCalls, Format: JSON}},
		{"cpu.calls", cpu, analyze.ViewOptions{AllKinds: true}, Options{View: ViewCalls}},
		{"timeline.processes.since-7ms", testcaptures.Timeline(t), analyze.ViewOptions{Filter: analyze.Filter{Since: 7 * time.Millisecond}}, Options{View: ViewProcesses}},
		// Source lines: "hot" at its line and at the line that calls
		// the "step" inlined in it, step at its own; the other
		// functions without lines.
		{"web.top.lines", testcaptures.Web(t), analyze.ViewOptions{Inline: true}, Options{Lines: true}},
		{"web.top.lines.no-inline.sort-total.limit-3", testcaptures.Web(t), analyze.ViewOptions{}, Options{Lines: true, SortTotal: true, Limit: 3}},
		{"web.top.lines.width-60", testcaptures.Web(t), analyze.ViewOptions{Inline: true}, Options{Lines: true, Width: 60, Limit: 4}},
		{"web.top.lines.json", testcaptures.Web(t), analyze.ViewOptions{Inline: true}, Options{Lines: true, Format: JSON}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := loadGolden(t, tc.name, tc.data, tc.vo)
			o := tc.o
			o.File, o.Select = "capture.syscap", tc.vo
			var buf bytes.Buffer
			d := Data{View: c.view, Timeline: c.tl}
			if o.View == ViewMemory {
				d.View = c.mem
			}
			if err := Generate(&buf, d, o); err != nil {
				t.Fatal(err)
			}
			name := tc.name
			if o.Format != JSON {
				name += ".txt"
			}
			testcaptures.Golden(t, filepath.Join("testdata", "golden", "options", name), buf.Bytes(), *update)
		})
	}
}
