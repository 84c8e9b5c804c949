package analyze

import (
	"bytes"
	"reflect"
	"testing"

	"nsprof/capture"
	"nsprof/internal/testcaptures"
)

// valueCaptures are the captures the value tests load.
var valueCaptures = []struct {
	name string
	data func(testing.TB) []byte
}{
	{"cpu", testcaptures.CPU}, {"memory", testcaptures.Memory}, {"memprof", testcaptures.Memprof},
	{"sysprof", testcaptures.Sysprof}, {"timeline", testcaptures.Timeline},
}

// refHeap is testcaptures.ReplayHeap as HeapStats.
func refHeap(t testing.TB, data []byte, pids ...int32) HeapStats {
	h := testcaptures.ReplayHeap(t, data, pids...)
	return HeapStats{
		Allocs: h.Allocs, Frees: h.Frees, Bytes: h.Bytes, Objects: h.Objects,
		LeakBytes: h.LeakBytes, LeakObjects: h.LeakObjects, TempBytes: h.TempBytes, TempObjects: h.TempObjects,
		Peak: h.Peak, PeakTime: h.PeakTime,
	}
}

// TestSampleValues: one Load gives the allocations as samples whose
// columns add up to what a plain replay of the capture's ALLOCATION
// frames gives, and the stack samples keep a count of 1 each.
func TestSampleValues(t *testing.T) {
	for _, c := range valueCaptures {
		t.Run(c.name, func(t *testing.T) {
			data := c.data(t)
			p, err := Load(bytes.NewReader(data), LoadOptions{NoHostFiles: true})
			if err != nil {
				t.Fatal(err)
			}
			checkRows(t, p)
			m := refHeap(t, data)
			if p.SampleTypes[0] != SamplesType {
				t.Fatalf("sample types %v: want samples first", p.SampleTypes)
			}
			cpu := int64(0)
			for i := range p.Samples {
				if p.Value(&p.Samples[i], 0) == 1 {
					cpu++
				}
			}
			if p.Totals[0] != cpu || int(cpu)+int(m.Allocs) != len(p.Samples) {
				t.Errorf("%d samples, %d counted, total %d; %d allocations", len(p.Samples), cpu, p.Totals[0], m.Allocs)
			}
			if m.Allocs+m.Frees == 0 {
				if p.HasAllocations() || len(p.SampleTypes) > 2 {
					t.Errorf("no allocations, sample types %v", p.SampleTypes)
				}
				return
			}
			want := []ValueType{SamplesType, AllocObjectsType, AllocSpaceType, InuseObjectsType, InuseSpaceType, TempObjectsType, TempSpaceType}
			if !reflect.DeepEqual(p.SampleTypes, want) {
				t.Fatalf("sample types %v, want %v", p.SampleTypes, want)
			}
			got := p.Totals[1:]
			exp := []int64{m.Objects, m.Bytes, m.LeakObjects, m.LeakBytes, m.TempObjects, m.TempBytes}
			if !reflect.DeepEqual(got, exp) {
				t.Errorf("allocation totals %v, the replay's %v", got, exp)
			}
		})
	}
}

// TestHeap: a view's heap statistics are those of a plain replay of the
// ALLOCATION frames of the processes it selects: totals, frees and the
// peak, which only the order of the events gives.
func TestHeap(t *testing.T) {
	for _, c := range valueCaptures {
		data := c.data(t)
		p, err := Load(bytes.NewReader(data), LoadOptions{NoHostFiles: true})
		if err != nil {
			t.Fatal(err)
		}
		vi, err := p.ValueIndex("alloc_space")
		if !p.HasAllocations() {
			if err == nil {
				t.Errorf("%s: no allocations, but a type alloc_space", c.name)
			}
			continue
		}
		for _, pids := range [][]int32{nil, {20}, {12667}, {12672}} {
			// Without the kernel's frames the view has samples of its
			// own, not the profile's by row.
			for _, hide := range []bool{false, true} {
				v, err := p.View(ViewOptions{Value: vi, Filter: Filter{PIDs: pids}, Inline: len(pids) == 0, HideKernel: hide})
				if err != nil {
					t.Fatal(err)
				}
				got, want := v.Heap(), refHeap(t, data, pids...)
				got.HasLost, got.Lost, got.SignalDropped = false, 0, 0
				if got != want {
					t.Errorf("%s pids %v hide kernel %v: Heap\n%+v\nreplay\n%+v", c.name, pids, hide, got, want)
				}
			}
		}
	}
}

// TestViewValue: a view weighing by alloc_space keeps the allocations
// only and sums their bytes in the function table, the tree and the
// groups; the default view of the same profile keeps the stack samples.
func TestViewValue(t *testing.T) {
	p, err := Load(bytes.NewReader(testcaptures.Memprof(t)), LoadOptions{NoHostFiles: true})
	if err != nil {
		t.Fatal(err)
	}
	vi, err := p.ValueIndex("alloc_space")
	if err != nil {
		t.Fatal(err)
	}
	v, err := p.View(ViewOptions{Value: vi})
	if err != nil {
		t.Fatal(err)
	}
	total := p.Totals[vi]
	if got := v.Weight(v.Samples); got != total || total == 0 {
		t.Errorf("view weight %d, want %d", got, total)
	}
	if root := v.Tree(v.Samples, TreeOptions{}); int64(root.Total) != total {
		t.Errorf("tree total %d, want %d", root.Total, total)
	}
	var self int64
	for _, f := range v.Top(v.Samples) {
		self += int64(f.Self)
	}
	if self != total {
		t.Errorf("function table's self values add up to %d, want %d", self, total)
	}
	var groups int64
	for _, g := range v.Group(v.Samples, GroupThread) {
		groups += g.Weight
	}
	if groups != total {
		t.Errorf("thread groups weigh %d, want %d", groups, total)
	}
	d, err := p.View(ViewOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if int64(len(d.Samples)) != p.Totals[0] {
		t.Errorf("default view: %d samples, want the %d stack samples", len(d.Samples), p.Totals[0])
	}
	if _, err := p.ValueIndex("off_cpu"); err == nil {
		t.Error("ValueIndex(off_cpu): no error")
	}
	if _, err := p.View(ViewOptions{Value: len(p.SampleTypes)}); err == nil {
		t.Error("View with a value out of range: no error")
	}
}

// TestLoadTimeline: the timeline Load builds in its one pass is the one
// LoadTimeline reads, on every test capture and on one cut short.
func TestLoadTimeline(t *testing.T) {
	type capt struct {
		name string
		data []byte
	}
	var cs []capt
	for _, c := range valueCaptures {
		cs = append(cs, capt{c.name, c.data(t)})
	}
	mp := testcaptures.Memprof(t)
	cs = append(cs, capt{"memprof-cut", mp[:len(mp)*2/3]})
	for _, c := range cs {
		t.Run(c.name, func(t *testing.T) {
			want, werr := LoadTimeline(bytes.NewReader(c.data))
			if (werr != nil) != (c.name == "memprof-cut") {
				t.Fatalf("LoadTimeline: %v", werr)
			}
			for _, load := range []func() (*Profile, error){
				func() (*Profile, error) {
					return Load(bytes.NewReader(c.data), LoadOptions{NoHostFiles: true, Timeline: true})
				},
				func() (*Profile, error) {
					return LoadBytes(c.data, LoadOptions{NoHostFiles: true, Timeline: true})
				},
			} {
				p, err := load()
				if (err == nil) != (werr == nil) {
					t.Fatalf("Load: %v; LoadTimeline: %v", err, werr)
				}
				if p.Timeline == nil {
					t.Fatal("no timeline")
				}
				if !reflect.DeepEqual(p.Timeline, want) {
					t.Errorf("Load's timeline\n%+v\nLoadTimeline's\n%+v", p.Timeline, want)
				}
			}
		})
	}
}

// TestCPUValue: a recording of cpu-clock at a known frequency gives each
// stack sample the CPU time of its period, next to its count, in one
// column the views weigh by and that allocations leave at 0; other
// events and unknown frequencies give no such column.
func TestCPUValue(t *testing.T) {
	write := func(event, freq string, alloc bool) *Profile {
		var buf bytes.Buffer
		w, err := capture.NewWriter(&buf)
		if err != nil {
			t.Fatal(err)
		}
		h := capture.FrameHeader{PID: 10, Time: 1, CPU: -1}
		frames := []capture.Frame{
			&capture.Metadata{FrameHeader: h, ID: capture.MetaEvent, Value: event},
			&capture.Metadata{FrameHeader: h, ID: capture.MetaFrequency, Value: freq},
			&capture.Sample{FrameHeader: h, TID: 10, Addrs: []uint64{0x401000}},
			&capture.Sample{FrameHeader: h, TID: 10, Addrs: []uint64{0x402000, 0x401000}},
			&capture.Sample{FrameHeader: h, TID: 10, Addrs: []uint64{0x401000}},
		}
		if alloc {
			frames = append(frames, &capture.Allocation{FrameHeader: h, TID: 10, Addr: 0x9000, Size: 64, Addrs: []uint64{0x401000}})
		}
		for _, f := range frames {
			if err := w.WriteFrame(f); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
		// One function per address: the addresses are in no mapping.
		p, err := LoadBytes(buf.Bytes(), LoadOptions{NoHostFiles: true, Addresses: true})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, alloc := range []bool{false, true} {
		p := write("cpu-clock", "4000", alloc)
		ci, err := p.ValueIndex("cpu")
		if err != nil || p.SampleTypes[ci] != CPUType {
			t.Fatalf("alloc %v: sample types %v: %v", alloc, p.SampleTypes, err)
		}
		if p.Totals[ci] != 3*250_000 || p.Totals[0] != 3 {
			t.Errorf("alloc %v: totals %v, want 3 samples of 250000 ns", alloc, p.Totals)
		}
		v, err := p.View(ViewOptions{Value: ci})
		if err != nil {
			t.Fatal(err)
		}
		if len(v.Samples) != 3 {
			t.Errorf("alloc %v: cpu view keeps %d samples, want the 3 stack samples", alloc, len(v.Samples))
		}
		if top := v.Top(v.Samples); len(top) == 0 || top[0].Self != 2*250_000 {
			t.Errorf("alloc %v: top %+v, want 500000 ns self first", alloc, top)
		}
		if got := p.Kind(ci); !reflect.DeepEqual(got, []int{0, ci}) {
			t.Errorf("alloc %v: Kind(cpu) = %v, want [0 %d]", alloc, got, ci)
		}
		if alloc {
			ai, _ := p.ValueIndex("alloc_space")
			if got := p.Kind(ai); len(got) != len(allocTypes) || got[0] != ci+1 {
				t.Errorf("Kind(alloc_space) = %v", got)
			}
		}
	}
	for _, c := range [][2]string{{"cycles", "4000"}, {"cpu-clock", "0"}, {"cpu-clock", "x"}, {"none", "999"}} {
		if p := write(c[0], c[1], false); len(p.SampleTypes) != 1 {
			t.Errorf("%s at %s Hz: sample types %v, want samples only", c[0], c[1], p.SampleTypes)
		}
	}
}

// TestNoAllocations: a load that leaves the allocations out still counts
// them and gives the stack samples of a full load.
func TestNoAllocations(t *testing.T) {
	data := testcaptures.Memprof(t)
	full, err := Load(bytes.NewReader(data), LoadOptions{NoHostFiles: true})
	if err != nil {
		t.Fatal(err)
	}
	p, err := LoadBytes(data, LoadOptions{NoHostFiles: true, NoAllocations: true})
	if err != nil {
		t.Fatal(err)
	}
	if p.Allocations != full.Allocations || p.Allocations == 0 || len(p.SampleTypes) != 1 || int64(len(p.Samples)) != full.Totals[0] {
		t.Errorf("NoAllocations: %d allocations (full load %d), sample types %v, %d samples (full load %d stack samples)",
			p.Allocations, full.Allocations, p.SampleTypes, len(p.Samples), full.Totals[0])
	}
}

// TestLiveHeap: the live bytes a view's allocations kept, over time,
// reach the view's peak at its time, never go below 0, move forward in
// time, and end at the leaked bytes where every allocation was recorded.
func TestLiveHeap(t *testing.T) {
	for _, c := range valueCaptures {
		p, err := Load(bytes.NewReader(c.data(t)), LoadOptions{NoHostFiles: true})
		if err != nil {
			t.Fatal(err)
		}
		if !p.HasAllocations() {
			if v, err := p.View(ViewOptions{}); err != nil || func() bool { pts, _ := v.LiveHeap(0, 0); return pts != nil }() {
				t.Errorf("%s: a heap without allocations (%v)", c.name, err)
			}
			continue
		}
		vi, err := p.ValueIndex("alloc_space")
		if err != nil {
			t.Fatal(err)
		}
		for _, pids := range [][]int32{nil, {20}, {12667}, {12672}} {
			v, err := p.View(ViewOptions{Value: vi, Filter: Filter{PIDs: pids}})
			if err != nil {
				t.Fatal(err)
			}
			h := v.Heap()
			series, changes := v.LiveHeap(0, 0)
			if h.Allocs == 0 {
				if series != nil {
					t.Errorf("%s pids %v: a heap of no allocations: %v", c.name, pids, series)
				}
				continue
			}
			peak, at := 0.0, int64(0)
			for i, pt := range series {
				if pt.Value < 0 || i > 0 && pt.Time <= series[i-1].Time {
					t.Fatalf("%s pids %v: point %d %+v after %+v", c.name, pids, i, pt, series[max(i-1, 0)])
				}
				if pt.Value > peak {
					peak, at = pt.Value, pt.Time
				}
			}
			if int64(peak) != h.Peak || at != h.PeakTime {
				t.Errorf("%s pids %v: the series peaks at %v at %d, Heap at %d at %d", c.name, pids, peak, at, h.Peak, h.PeakTime)
			}
			if last := series[len(series)-1].Value; h.SampleBytes == 0 && int64(last) != h.LeakBytes {
				t.Errorf("%s pids %v: %v bytes live at the end, %d leaked", c.name, pids, last, h.LeakBytes)
			}
			// In buckets: each keeps its smallest and largest value, in
			// time order, so the peak stays.
			start := series[0].Time
			width := (series[len(series)-1].Time-start)/3 + 1 // three buckets
			buckets, n := map[int64]int{}, 0
			peakKept := false
			pts, _ := v.LiveHeap(start, width)
			for i, pt := range pts {
				buckets[(pt.Time-start)/width]++
				if i > 0 && pt.Time < pts[i-1].Time {
					t.Errorf("%s pids %v: bucketed point %d %+v before %+v", c.name, pids, i, pt, pts[i-1])
				}
				peakKept = peakKept || int64(pt.Value) == h.Peak
				n++
			}
			for b, k := range buckets {
				if k > 2 {
					t.Errorf("%s pids %v: %d points in bucket %d", c.name, pids, k, b)
				}
			}
			if len(series) > 6 && n > 6 {
				t.Errorf("%s pids %v: %d points in three buckets", c.name, pids, n)
			}
			if !peakKept || n > len(series) || changes < len(series) {
				t.Errorf("%s pids %v: bucketed: %d points of %d (%d changes), the peak kept: %v", c.name, pids, n, len(series), changes, peakKept)
			}
		}
	}
}

// checkRows fails t unless addValues adds, for every sample of p, what
// Value gives column by column, and p.Totals are the columns' sums.
func checkRows(t *testing.T, p *Profile) {
	t.Helper()
	totals := make([]int64, len(p.SampleTypes))
	for i := range p.Samples {
		s := &p.Samples[i]
		got := make([]int64, len(p.SampleTypes))
		p.addValues(s, got)
		for c := range got {
			if v := p.Value(s, c); got[c] != v {
				t.Fatalf("sample %d column %s: addValues gives %d, Value %d", i, p.SampleTypes[c].Type, got[c], v)
			}
			totals[c] += got[c]
		}
	}
	if !reflect.DeepEqual(totals, p.Totals) {
		t.Errorf("totals %v, the columns add up to %v", p.Totals, totals)
	}
}
