package analyze

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"nsprof/capture"
)

// The synthetic capture: two processes with known mappings, a __symbols__
// bundle for pid 100, an embedded kallsyms, a JIT name, and samples whose
// stacks are given by name below. Every expected number in the tests is
// computed from these tables by a naive reference implementation.

const (
	testStart = int64(1_000_000_000)
	kBase     = uint64(0xffffffff81000000)
	tagApp    = "" // the bundle leaves the tag empty: the DSO comes from the MAP
)

// Named addresses: 0x10 into each function.
var syms = map[string]struct {
	pid    int32
	addr   uint64
	kernel bool
	dso    string
}{
	"main":                         {100, 0x1010, false, "app"},
	"foo":                          {100, 0x1110, false, "app"},
	"bar":                          {100, 0x1210, false, "app"},
	"rec":                          {100, 0x1310, false, "app"},
	"memcpy":                       {100, 0x10010, false, "libc.so.6"}, // the mapping names the DSO, not the tag
	"sys_read":                     {-1, kBase + 0x108, true, "[kernel]"},
	"helper":                       {-1, kBase + 0x201, true, "[kernel]"},
	"modfn":                        {-1, 0xffffffffc0000010, true, "[ext4]"},
	"jitfn":                        {100, 0, false, "[jit]"},
	"tool+0x2123":                  {200, 0x40123, false, "tool"},
	"[unknown] 0xffffffffa0000000": {-1, 0xffffffffa0000000, true, "[kernel]"},
	"[unknown] 0x7000":             {200, 0x7000, false, ""},
}

type testSample struct {
	pid, tid int32
	ms       int64    // time after testStart
	stack    []string // leaf first; kernel names first
	n        int      // how many samples
}

var testSamples = []testSample{
	{100, 100, 1, []string{"bar", "foo", "main"}, 3},
	{100, 101, 2, []string{"sys_read", "helper", "memcpy", "foo", "main"}, 2},
	{100, 100, 3, []string{"rec", "rec", "rec", "main"}, 1},
	{200, 200, 4, []string{"tool+0x2123"}, 1},
	{200, 200, 5, []string{"[unknown] 0xffffffffa0000000", "modfn", "[unknown] 0x7000"}, 1},
	{100, 100, 6, []string{"jitfn", "main"}, 1},
	{100, 101, 7, []string{"bar", "foo", "main"}, 2},
}

const testKallsyms = "0000000000000000 A fixed_percpu_data\n" +
	"ffffffff81000000 T _stext\n" +
	"ffffffff81000100 T sys_read\n" +
	"ffffffff81000100 T __alias_of_sys_read\n" +
	"ffffffff81000200 t helper\n" +
	"ffffffff81000280 D some_data\n" +
	"ffffffffc0000000 t modfn\t[ext4]\n"

// writeTestCapture writes the synthetic capture.
func writeTestCapture(t testing.TB) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := capture.NewWriterWithOptions(&buf, capture.WriterOptions{
		StartTime: testStart, EndTime: testStart + 10e6,
		CaptureTime: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
		Clock:       func() int64 { return math.MinInt64 },
	})
	if err != nil {
		t.Fatal(err)
	}
	h := func(pid int32, ms int64) capture.FrameHeader {
		return capture.FrameHeader{CPU: 0, PID: pid, Time: testStart + ms*1e6}
	}
	jit, err := w.AddJITMap("jitfn")
	if err != nil {
		t.Fatal(err)
	}
	addrOf := func(name string) uint64 {
		if name == "jitfn" {
			return jit
		}
		s, ok := syms[name]
		if !ok {
			t.Fatalf("no address for %q", name)
		}
		return s.addr
	}
	frames := []capture.Frame{
		&capture.Process{FrameHeader: h(100, 0), Cmdline: "/usr/bin/app --serve"},
		&capture.Process{FrameHeader: h(200, 0), Cmdline: "/usr/bin/tool"},
		&capture.Map{FrameHeader: h(100, 0), Start: 0x1000, End: 0x5000, Offset: 0, Filename: "/usr/bin/app"},
		&capture.Map{FrameHeader: h(100, 0), Start: 0x10000, End: 0x20000, Offset: 0x1000, Filename: "/usr/lib/libc.so.6"},
		&capture.Map{FrameHeader: h(200, 0), Start: 0x40000, End: 0x50000, Offset: 0x2000, Filename: "/usr/bin/tool"},
		&capture.CounterDefine{FrameHeader: h(-1, 0), Counters: []capture.Counter{{Category: "Sampler", Name: "Lost Samples", ID: 7}}},
	}
	for _, f := range frames {
		if err := w.WriteFrame(f); err != nil {
			t.Fatal(err)
		}
	}
	for _, s := range testSamples {
		var addrs []uint64
		kernel := false
		for i, name := range s.stack {
			k := syms[name].kernel
			if i == 0 && k {
				addrs = append(addrs, capture.ContextKernel)
				kernel = true
			}
			if (i == 0 || kernel) && !k {
				addrs = append(addrs, capture.ContextUser)
				kernel = false
			}
			addrs = append(addrs, addrOf(name))
		}
		for range s.n {
			if err := w.WriteFrame(&capture.Sample{FrameHeader: h(s.pid, s.ms), TID: s.tid, Addrs: addrs}); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, v := range []int64{3, 5} {
		if err := w.SetCounters(h(-1, 8), []capture.CounterUpdate{{ID: 7, Value: capture.IntValue(v)}}); err != nil {
			t.Fatal(err)
		}
	}
	bundle, err := capture.EncodeSymbols([]capture.Symbol{
		{PID: 100, Begin: 0x1000, End: 0x10ff, Name: "main"},
		{PID: 100, Begin: 0x1100, End: 0x11ff, Name: "foo"},
		{PID: 100, Begin: 0x1200, End: 0x12ff, Name: "bar"},
		{PID: 100, Begin: 0x1300, End: 0x13ff, Name: "rec"},
		{PID: 100, Begin: 0x10000, End: 0x100ff, Name: "memcpy", Tag: "libc"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.AddFileGzip(h(-1, 9), capture.SymbolsFile, bundle); err != nil {
		t.Fatal(err)
	}
	if err := w.AddFileGzip(h(-1, 9), "/proc/kallsyms", []byte(testKallsyms)); err != nil {
		t.Fatal(err)
	}
	var procs bytes.Buffer
	for _, v := range []any{
		capture.ProcessInfo{Kind: "process", PID: 100, NSpid: []int{100, 1}, Comm: "app", Container: &capture.ContainerInfo{Kind: "podman", ID: "abcdef0123456789", Name: "web"}},
		capture.ProcessInfo{Kind: "process", PID: 200, Comm: "tool", Container: &capture.ContainerInfo{Kind: "host"}},
		capture.ThreadInfo{Kind: "thread", TID: 101, PID: 100, NSpid: []int{101, 2}},
	} {
		b, _ := json.Marshal(v)
		procs.Write(append(b, '\n'))
	}
	if err := w.AddFileBytes(h(-1, 9), capture.ProcessFile, procs.Bytes()); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// loadTest loads the synthetic capture with one function per unnamed
// address, the names its table of samples uses (TestUnnamedByDSO checks
// the default).
func loadTest(t testing.TB) *Profile {
	t.Helper()
	p, err := Load(bytes.NewReader(writeTestCapture(t)), LoadOptions{Addresses: true})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// refTop computes self and total sample counts per function name from the
// sample table, naively.
func refTop(keep func(testSample) bool) (self, total map[string]int, n int) {
	self, total = map[string]int{}, map[string]int{}
	for _, s := range testSamples {
		if !keep(s) {
			continue
		}
		n += s.n
		self[s.stack[0]] += s.n
		seen := map[string]bool{}
		for _, name := range s.stack {
			if !seen[name] {
				seen[name] = true
				total[name] += s.n
			}
		}
	}
	return self, total, n
}

func all(testSample) bool { return true }

func checkTop(t *testing.T, p *Profile, samples []Sample, keep func(testSample) bool) {
	t.Helper()
	self, total, n := refTop(keep)
	if len(samples) != n {
		t.Fatalf("%d samples, want %d", len(samples), n)
	}
	top := p.Top(samples)
	if len(top) != len(total) {
		t.Errorf("%d functions, want %d: %+v", len(top), len(total), top)
	}
	for i, s := range top {
		if s.Self != self[s.Name] || s.Total != total[s.Name] {
			t.Errorf("%s: self %d total %d, want %d %d", s.Name, s.Self, s.Total, self[s.Name], total[s.Name])
		}
		if want := syms[s.Name].dso; s.DSO != want {
			t.Errorf("%s: DSO %q, want %q", s.Name, s.DSO, want)
		}
		if want := 100 * float64(s.Total) / float64(n); math.Abs(s.TotalPercent-want) > 1e-9 {
			t.Errorf("%s: total %.3f%%, want %.3f%%", s.Name, s.TotalPercent, want)
		}
		if i > 0 && (top[i-1].Self < s.Self || top[i-1].Self == s.Self && top[i-1].Total < s.Total) {
			t.Errorf("not sorted by self, total at %d: %+v", i, top[i-1:i+1])
		}
	}
}

func TestTop(t *testing.T) {
	p := loadTest(t)
	checkTop(t, p, p.Samples, all)
	top := p.Top(p.Samples)
	// Spot checks straight from the table: bar is the leaf of 3+2
	// samples, rec recursing three deep still counts once.
	if top[0].Name != "bar" || top[0].Self != 5 {
		t.Errorf("first function %+v, want bar with 5", top[0])
	}
	for _, s := range top {
		if s.Name == "rec" && s.Total != 1 {
			t.Errorf("rec total %d, want 1 (recursion counted once)", s.Total)
		}
	}
}

// TestTopN: the first n functions are Top's first n, and the count is
// of them all, for every n; firstN picks the first n of ids whose keys
// tie often, as a sort does.
func TestTopN(t *testing.T) {
	p := loadTest(t)
	all := p.Top(p.Samples)
	for n := -1; n <= len(all)+1; n++ {
		top, count := p.TopN(p.Samples, n)
		want := all
		if n > 0 && n < len(all) {
			want = all[:n]
		}
		if !reflect.DeepEqual(top, want) || count != len(all) {
			t.Errorf("TopN %d: %d functions of %d, want %d of %d", n, len(top), count, len(want), len(all))
		}
	}
	keys := make([]int, 5000)
	ids := make([]int32, len(keys))
	for i := range keys {
		keys[i] = (i * 7919) % 97 // many ties
		ids[i] = int32(i)
	}
	by := func(a, b int32) int {
		if c := cmp.Compare(keys[a], keys[b]); c != 0 {
			return c
		}
		return cmp.Compare(b, a)
	}
	sorted := slices.SortedFunc(slices.Values(ids), by)
	for _, n := range []int{1, 2, 3, 50, 97, 98, 4999} {
		got := firstN(ids, n, by)
		slices.SortFunc(got, by)
		if !slices.Equal(got, sorted[:n]) {
			t.Errorf("firstN %d: %v..., want %v...", n, got[:min(n, 5)], sorted[:min(n, 5)])
		}
	}
}

func TestLoadModel(t *testing.T) {
	p := loadTest(t)
	if len(p.Processes) != 2 || p.Process(100) == nil || p.Process(200) == nil {
		t.Fatalf("processes %+v", p.Processes)
	}
	app := p.Process(100)
	if app.Comm != "app" || app.Cmdline != "/usr/bin/app --serve" || app.NSPID != 1 || app.Container.Label() != "podman:web (abcdef012345)" || len(app.Maps) != 2 {
		t.Errorf("pid 100: %+v container %+v", app, app.Container)
	}
	if c := p.Process(200).Container.Label(); c != "host" {
		t.Errorf("pid 200 container %q", c)
	}
	if th := p.Thread(101); th == nil || th.PID != 100 || th.NSTID != 2 || th.Samples != 4 {
		t.Errorf("thread 101: %+v", th)
	}
	if th := p.Thread(100); th == nil || th.NSTID != 1 {
		t.Errorf("thread 100 (main thread): %+v", th)
	}
	if !p.HasLost || p.Lost != 5 {
		t.Errorf("lost %d (has %t), want 5", p.Lost, p.HasLost)
	}
	if p.Start != testStart || p.Duration() != 10e6 {
		t.Errorf("start %d duration %d", p.Start, p.Duration())
	}
	if p.Bundle == nil || p.Kallsyms == nil {
		t.Fatal("bundle or kallsyms not found")
	}
	// Distinct (pid, address, return address or not) frames, each
	// counted by the source that named it. User addresses after the
	// first of their stack are return addresses.
	want := map[string]int{}
	seen := map[string]bool{}
	for _, s := range testSamples {
		firstUser := slices.IndexFunc(s.stack, func(n string) bool { return !syms[n].kernel })
		for i, name := range s.stack {
			key := fmt.Sprint(s.pid, name, !syms[name].kernel && i > firstUser)
			if seen[key] {
				continue
			}
			seen[key] = true
			switch {
			case name == "jitfn":
				want["jit"]++
			case strings.HasPrefix(name, "[unknown]") || strings.Contains(name, "+0x"):
				want["unresolved"]++
			case syms[name].kernel:
				want["kallsyms"]++
			default:
				want["bundle"]++
			}
		}
	}
	for k, n := range want {
		if p.SymbolStats[k] != n {
			t.Errorf("SymbolStats %v, want %v", p.SymbolStats, want)
			break
		}
	}
	if n := p.NumStacks(); n != len(testSamples)-1 {
		t.Errorf("%d distinct stacks, want %d (two table rows share one)", n, len(testSamples)-1)
	}
	for _, s := range p.Samples {
		for _, fr := range p.Stack(s.Stack) {
			f := p.Frames[fr]
			if capture.IsContext(f.Addr) {
				t.Errorf("context marker %#x kept as a frame", f.Addr)
			}
			if f.Kernel != syms[f.Loc.Function].kernel {
				t.Errorf("%s: kernel %t", f.Loc.Function, f.Kernel)
			}
		}
	}
}

// refPaths returns the total samples per call path ("a>b>c", root first
// for top-down, leaf first for bottom-up), with paths cut at depth.
func refPaths(bottomUp bool, depth int) map[string]int {
	out := map[string]int{}
	for _, s := range testSamples {
		names := slices.Clone(s.stack)
		if !bottomUp {
			slices.Reverse(names)
		}
		if depth > 0 && len(names) > depth {
			names = names[:depth]
		}
		for i := range names {
			out[strings.Join(names[:i+1], ">")] += s.n
		}
	}
	return out
}

func treePaths(root *Node) map[string]int {
	out := map[string]int{}
	var path []string
	root.Walk(func(n *Node, depth int) bool {
		if depth == 0 {
			return true
		}
		path = append(path[:depth-1], n.Name)
		out[strings.Join(path, ">")] = n.Total
		return true
	})
	return out
}

func TestTree(t *testing.T) {
	p := loadTest(t)
	for _, tc := range []struct {
		name string
		o    TreeOptions
	}{
		{"top-down", TreeOptions{}},
		{"bottom-up", TreeOptions{BottomUp: true}},
		{"depth-2", TreeOptions{MaxDepth: 2}},
		{"bottom-up-depth-1", TreeOptions{BottomUp: true, MaxDepth: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := p.Tree(p.Samples, tc.o)
			if root.Total != len(p.Samples) {
				t.Errorf("root total %d, want %d", root.Total, len(p.Samples))
			}
			got, want := treePaths(root), refPaths(tc.o.BottomUp, tc.o.MaxDepth)
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("paths\n got %v\nwant %v", got, want)
			}
			root.Walk(func(n *Node, depth int) bool {
				sum := n.Self
				for i, c := range n.Children {
					sum += c.Total
					if i > 0 && n.Children[i-1].Total < c.Total {
						t.Errorf("children of %q not sorted", n.Name)
					}
				}
				if tc.o.MaxDepth == 0 && sum != n.Total {
					t.Errorf("%q: self %d + children != total %d", n.Name, n.Self, n.Total)
				}
				return true
			})
		})
	}
	// Top-down leaf self counts equal the functions' self samples.
	self, _, _ := refTop(all)
	gotSelf := map[string]int{}
	p.Tree(p.Samples, TreeOptions{}).Walk(func(n *Node, _ int) bool {
		gotSelf[n.Name] += n.Self
		return true
	})
	delete(gotSelf, "")
	for k, v := range gotSelf {
		if v == 0 {
			delete(gotSelf, k)
		}
	}
	if fmt.Sprint(gotSelf) != fmt.Sprint(self) {
		t.Errorf("tree self %v, want %v", gotSelf, self)
	}
}

func TestTreeMinPercent(t *testing.T) {
	p := loadTest(t)
	root := p.Tree(p.Samples, TreeOptions{MinPercent: 30})
	want := map[string]int{}
	for path, n := range refPaths(false, 0) {
		if float64(n) >= 0.3*float64(len(p.Samples)) {
			want[path] = n
		}
	}
	if got := treePaths(root); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("paths\n got %v\nwant %v", got, want)
	}
}

func TestSelect(t *testing.T) {
	p := loadTest(t)
	has := func(names ...string) func(testSample) bool {
		return func(s testSample) bool {
			for _, n := range s.stack {
				if slices.Contains(names, n) {
					return true
				}
			}
			return false
		}
	}
	for _, tc := range []struct {
		name string
		f    Filter
		keep func(testSample) bool
	}{
		{"pid", Filter{PIDs: []int32{200}}, func(s testSample) bool { return s.pid == 200 }},
		{"pids", Filter{PIDs: []int32{100, 200}}, all},
		{"tid", Filter{TIDs: []int32{101}}, func(s testSample) bool { return s.tid == 101 }},
		{"comm", Filter{Comm: "^app$"}, func(s testSample) bool { return s.pid == 100 }},
		{"comm-cmdline", Filter{Comm: "bin/to"}, func(s testSample) bool { return s.pid == 200 }},
		{"container-name", Filter{Container: "web"}, func(s testSample) bool { return s.pid == 100 }},
		{"container-id", Filter{Container: "abcdef01"}, func(s testSample) bool { return s.pid == 100 }},
		{"container-host", Filter{Container: "host"}, func(s testSample) bool { return s.pid == 200 }},
		{"container-none", Filter{Container: "nosuch"}, func(testSample) bool { return false }},
		{"dso", Filter{DSO: "LIBC"}, has("memcpy")},
		{"dso-kernel", Filter{DSO: "kernel"}, has("sys_read", "[unknown] 0xffffffffa0000000")},
		{"since", Filter{Since: 3 * time.Millisecond}, func(s testSample) bool { return s.ms >= 3 }},
		{"until", Filter{Until: 3 * time.Millisecond}, func(s testSample) bool { return s.ms < 3 }},
		{"and", Filter{PIDs: []int32{100}, Since: 2 * time.Millisecond, Until: 7 * time.Millisecond},
			func(s testSample) bool { return s.pid == 100 && s.ms >= 2 && s.ms < 7 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := p.Select(tc.f)
			if err != nil {
				t.Fatal(err)
			}
			checkTop(t, p, got, tc.keep)
			// SelectFrom among the second half keeps the same
			// samples of it.
			half := p.Samples[len(p.Samples)/2:]
			from, err := p.SelectFrom(half, tc.f)
			if err != nil {
				t.Fatal(err)
			}
			var want, rows []int32
			for _, s := range got {
				if s.Row >= half[0].Row {
					want = append(want, s.Row)
				}
			}
			for _, s := range from {
				rows = append(rows, s.Row)
			}
			if !slices.Equal(rows, want) {
				t.Errorf("SelectFrom the second half: rows %v, want %v", rows, want)
			}
		})
	}
	if _, err := p.Select(Filter{Comm: "("}); err == nil {
		t.Error("bad comm pattern accepted")
	}
}

func TestGroup(t *testing.T) {
	p := loadTest(t)
	for _, tc := range []struct {
		by   GroupBy
		key  func(testSample) string
		want map[string]string // key -> container label
	}{
		{GroupProcess, func(s testSample) string { return fmt.Sprint(s.pid) }, map[string]string{"100": "podman:web (abcdef012345)", "200": "host"}},
		{GroupThread, func(s testSample) string { return fmt.Sprint(s.tid) }, map[string]string{"100": "podman:web (abcdef012345)", "101": "podman:web (abcdef012345)", "200": "host"}},
		{GroupContainer, func(s testSample) string {
			return map[int32]string{100: "podman:web (abcdef012345)", 200: "host"}[s.pid]
		}, map[string]string{"podman:web (abcdef012345)": "podman:web (abcdef012345)", "host": "host"}},
		{GroupNone, func(testSample) string { return "all" }, map[string]string{"all": ""}},
	} {
		t.Run(tc.by.String(), func(t *testing.T) {
			groups := p.Group(p.Samples, tc.by)
			if len(groups) != len(tc.want) {
				t.Fatalf("%d groups, want %d", len(groups), len(tc.want))
			}
			for i, g := range groups {
				if g.Container != tc.want[g.Key] {
					t.Errorf("group %s container %q, want %q", g.Key, g.Container, tc.want[g.Key])
				}
				if wantID := map[string]string{"podman:web (abcdef012345)": "abcdef0123456789"}[g.Container]; g.ContainerID != wantID {
					t.Errorf("group %s container id %q, want %q", g.Key, g.ContainerID, wantID)
				}
				if i > 0 && len(groups[i-1].Samples) < len(g.Samples) {
					t.Errorf("groups not sorted by size")
				}
				if tc.by == GroupThread && (g.Thread == nil || fmt.Sprint(g.Thread.TID) != g.Key) {
					t.Errorf("group %s thread %+v", g.Key, g.Thread)
				}
				checkTop(t, p, g.Samples, func(s testSample) bool { return tc.key(s) == g.Key })
			}
		})
	}
	if g, err := ParseGroupBy("container"); err != nil || g != GroupContainer {
		t.Errorf("ParseGroupBy(container) = %v, %v", g, err)
	}
	if _, err := ParseGroupBy("cpu"); err == nil {
		t.Error("ParseGroupBy(cpu) accepted")
	}
}

// TestDamaged cuts the capture inside every sample frame in turn: Load
// returns the samples before the cut with an error naming an offset.
func TestDamaged(t *testing.T) {
	data := writeTestCapture(t)
	r, err := capture.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	var cuts []int64 // offsets inside sample frames, and how many samples precede
	var before []int
	n := 0
	for {
		off := r.Offset()
		f, err := r.Next()
		if err != nil {
			break
		}
		if _, ok := f.(*capture.Sample); ok {
			cuts = append(cuts, off+30)
			before = append(before, n)
			n++
		}
	}
	for i, cut := range cuts {
		p, err := Load(bytes.NewReader(data[:cut]), LoadOptions{})
		var fe *capture.FormatError
		if !errors.As(err, &fe) || fe.Off > cut {
			t.Fatalf("cut at %d: error %v, want a FormatError at or before the cut", cut, err)
		}
		if p == nil || len(p.Samples) != before[i] {
			t.Fatalf("cut at %d: %v samples, want the %d before the cut", cut, p, before[i])
		}
		p.Top(p.Samples)
		p.Tree(p.Samples, TreeOptions{BottomUp: true})
	}
	if p, err := Load(bytes.NewReader(data[:100]), LoadOptions{}); p != nil || err == nil {
		t.Errorf("truncated header: %v, %v", p, err)
	}
}

func TestNoSymbolize(t *testing.T) {
	p, err := Load(bytes.NewReader(writeTestCapture(t)), LoadOptions{NoSymbolize: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range p.Frames {
		if !strings.Contains(f.Loc.Function, "+0x") && !strings.HasPrefix(f.Loc.Function, "[unknown] ") {
			t.Errorf("frame %#x named %q without symbolizers", f.Addr, f.Loc.Function)
		}
	}
	// A custom symbolizer applied later names what it knows.
	p.Symbolize(Chain{p.CaptureSymbolizer(), fakeSymbolizer{}})
	found := false
	for _, f := range p.Frames {
		if f.Loc.Function == "fake_0x7000" {
			found = f.Loc.DSO == "fake"
		}
	}
	if !found || p.SymbolStats["fake"] != 1 {
		t.Errorf("custom symbolizer not used: stats %v", p.SymbolStats)
	}
}

type fakeSymbolizer struct{}

func (fakeSymbolizer) Symbolize(pid int32, addr uint64, kernel bool) (Location, bool) {
	if pid == 200 && addr == 0x7000 {
		return Location{Function: "fake_0x7000", DSO: "fake"}, true
	}
	return Location{}, false
}

func (fakeSymbolizer) String() string { return "fake" }
