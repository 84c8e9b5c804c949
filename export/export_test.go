package export

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"nsprof/analyze"
	"nsprof/capture"
)

const testStart = int64(1_000_000_000)

// hostile are function names that break naive exporters: markup, XML
// references, quotes, CDATA ends, control characters, invalid UTF-8, the
// folded format's separators.
var hostile = []string{
	`</text><script>alert(1)</script>`,
	`a&b&amp;<c>`,
	`"double" 'single'`,
	`]]><!-- -->`,
	"ctl\x01\x1b[31m",
	"bad\xff\xfeutf8",
	"semi;colon",
	"new\nline",
	"operator<<(std::ostream&, Foo const&)",
}

// testStacks are the synthetic capture's stacks by function name, leaf
// first; kernel frames are named k_*.
var testStacks = []struct {
	pid, tid int32
	ms       int64
	stack    []string
	n        int
}{
	{10, 10, 1, []string{"hot", "work", "main"}, 5},
	{10, 11, 2, []string{"k_read", "k_entry", "read", "work", "main"}, 3},
	{10, 11, 3, []string{"work", "main"}, 2},
	{20, 20, 4, []string{hostile[0], hostile[1], "main"}, 1},
	{20, 20, 5, []string{hostile[2], hostile[3], hostile[4], hostile[5], "main"}, 1},
	{20, 21, 6, []string{hostile[6], hostile[7], hostile[8], "main"}, 2},
	{20, 20, 7, []string{"k_idle"}, 1},
}

// writeTestCapture writes a capture of testStacks: a symbol bundle names
// every address, pid 10 runs in podman container "web" with ns pid 1, its
// binary has a build-id.
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
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(w.WriteFrame(&capture.Process{FrameHeader: h(10, 0), Cmdline: "/usr/bin/server --port 80"}))
	must(w.WriteFrame(&capture.Process{FrameHeader: h(20, 0), Cmdline: "/usr/bin/evil"}))
	must(w.WriteFrame(&capture.Map{FrameHeader: h(10, 0), Start: 0x400000, End: 0x500000, Offset: 0x1000, Filename: "/usr/bin/server", BuildID: "0123abcd"}))
	must(w.WriteFrame(&capture.Map{FrameHeader: h(20, 0), Start: 0x400000, End: 0x500000, Filename: "/usr/bin/evil"}))
	addr := map[string]uint64{}
	var syms []capture.Symbol
	var kallsyms bytes.Buffer
	next := map[bool]uint64{false: 0x401000, true: 0xffffffff81000000}
	for _, s := range testStacks {
		for _, name := range s.stack {
			if _, ok := addr[name]; ok {
				continue
			}
			k := strings.HasPrefix(name, "k_")
			a := next[k]
			next[k] += 0x100
			addr[name] = a + 0x10
			if k {
				fmt.Fprintf(&kallsyms, "%x T %s\n", a, name)
				continue
			}
			for _, p := range []int32{10, 20} {
				syms = append(syms, capture.Symbol{PID: p, Begin: a, End: a + 0xff, Name: name})
			}
		}
	}
	for _, s := range testStacks {
		var addrs []uint64
		inKernel := false
		for i, name := range s.stack {
			k := strings.HasPrefix(name, "k_")
			if i == 0 && k {
				addrs, inKernel = append(addrs, capture.ContextKernel), true
			}
			if (i == 0 || inKernel) && !k {
				addrs, inKernel = append(addrs, capture.ContextUser), false
			}
			addrs = append(addrs, addr[name])
		}
		for range s.n {
			must(w.WriteFrame(&capture.Sample{FrameHeader: h(s.pid, s.ms), TID: s.tid, Addrs: addrs}))
		}
	}
	bundle, err := capture.EncodeSymbols(syms)
	must(err)
	must(w.AddFileGzip(h(-1, 9), capture.SymbolsFile, bundle))
	must(w.AddFileGzip(h(-1, 9), "/proc/kallsyms", kallsyms.Bytes()))
	var procs bytes.Buffer
	for _, v := range []any{
		capture.ProcessInfo{Kind: "process", PID: 10, NSpid: []int{10, 1}, Comm: "server", Container: &capture.ContainerInfo{Kind: "podman", ID: "abcdef0123456789", Name: "web"}},
		capture.ProcessInfo{Kind: "process", PID: 20, Comm: "evil", Container: &capture.ContainerInfo{Kind: "host"}},
	} {
		b, _ := json.Marshal(v)
		procs.Write(append(b, '\n'))
	}
	must(w.AddFileBytes(h(-1, 9), capture.ProcessFile, procs.Bytes()))
	must(w.Close())
	return buf.Bytes()
}

func loadTestView(t testing.TB, o analyze.ViewOptions) *analyze.View {
	t.Helper()
	p, err := analyze.Load(bytes.NewReader(writeTestCapture(t)), analyze.LoadOptions{NoHostFiles: true})
	if err != nil {
		t.Fatal(err)
	}
	v, err := p.View(o)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func generate(t testing.TB, v *analyze.View, f Format, o Options) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := Generate(&buf, v, f, o); err != nil {
		t.Fatalf("%v: %v", f, err)
	}
	return buf.Bytes()
}

// foldedTotals re-aggregates folded stacks: samples, and self and total
// (once per line) per frame name; skip leaves out root frames.
func foldedTotals(t testing.TB, data []byte, skip int) (n int, self, total map[string]int) {
	t.Helper()
	self, total = map[string]int{}, map[string]int{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := sc.Text()
		i := strings.LastIndexByte(line, ' ')
		c, err := strconv.Atoi(line[i+1:])
		if i < 0 || err != nil || c <= 0 {
			t.Fatalf("bad folded line %q", line)
		}
		frames := strings.Split(line[:i], ";")[skip:]
		n += c
		self[frames[len(frames)-1]] += c
		seen := map[string]bool{}
		for _, f := range frames {
			if !seen[f] {
				seen[f] = true
				total[f] += c
			}
		}
	}
	return n, self, total
}

// topByName sums a view's top functions by folded name.
func topByName(v *analyze.View) (self, total map[string]int) {
	self, total = map[string]int{}, map[string]int{}
	for _, s := range v.Top(v.Samples) {
		name := foldedName(s.Name)
		if s.Self > 0 {
			self[name] += s.Self
		}
		total[name] += s.Total
	}
	return self, total
}

func TestFolded(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    analyze.ViewOptions
		by   analyze.GroupBy
	}{
		{"all", analyze.ViewOptions{}, analyze.GroupNone},
		{"by-process", analyze.ViewOptions{}, analyze.GroupProcess},
		{"hide-kernel", analyze.ViewOptions{HideKernel: true}, analyze.GroupNone},
		{"focus", analyze.ViewOptions{Focus: "work"}, analyze.GroupThread},
		{"pid", analyze.ViewOptions{Filter: analyze.Filter{PIDs: []int32{20}}}, analyze.GroupContainer},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := loadTestView(t, tc.o)
			out := generate(t, v, FormatFolded, Options{By: tc.by})
			skip := 0
			if tc.by != analyze.GroupNone {
				skip = 1
			}
			n, self, total := foldedTotals(t, out, skip)
			if n != len(v.Samples) {
				t.Errorf("%d samples in folded, view has %d", n, len(v.Samples))
			}
			wself, wtotal := topByName(v)
			if !equal(self, wself) || !equal(total, wtotal) {
				t.Errorf("folded self %v total %v\nreport self %v total %v\n%s", self, total, wself, wtotal, out)
			}
		})
	}
	v := loadTestView(t, analyze.ViewOptions{})
	out := string(generate(t, v, FormatFolded, Options{By: analyze.GroupProcess}))
	if !strings.Contains(out, "server [pid 10];main;work;hot 5\n") {
		t.Errorf("no root frame per process:\n%s", out)
	}
	inv := loadTestView(t, analyze.ViewOptions{Invert: true})
	if out := string(generate(t, inv, FormatFolded, Options{})); !strings.Contains(out, "hot;work;main 5\n") {
		t.Errorf("inverted:\n%s", out)
	}
}

func equal(a, b map[string]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, x := range a {
		if b[k] != x {
			return false
		}
	}
	return true
}

func TestParseFormat(t *testing.T) {
	for _, f := range []Format{FormatPprof, FormatSpeedscope, FormatFolded, FormatSVG} {
		if g, err := ParseFormat(f.String()); err != nil || g != f {
			t.Errorf("ParseFormat(%q) = %v, %v", f, g, err)
		}
	}
	if _, err := ParseFormat("json"); err == nil {
		t.Error("json accepted")
	}
	if err := Generate(&bytes.Buffer{}, loadTestView(t, analyze.ViewOptions{}), Format(99), Options{}); err == nil {
		t.Error("Format(99) accepted")
	}
}
