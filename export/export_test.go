package export

import (
	"bufio"
	"bytes"
	"strconv"
	"strings"
	"testing"

	"nsprof/analyze"
	"nsprof/internal/testcaptures"
)

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
var testStacks = []testcaptures.Stack{
	{PID: 10, TID: 10, MS: 1, Frames: []string{"hot", "work", "main"}, N: 5},
	{PID: 10, TID: 11, MS: 2, Frames: []string{"k_read", "k_entry", "read", "work", "main"}, N: 3},
	{PID: 10, TID: 11, MS: 3, Frames: []string{"work", "main"}, N: 2},
	{PID: 20, TID: 20, MS: 4, Frames: []string{hostile[0], hostile[1], "main"}, N: 1},
	{PID: 20, TID: 20, MS: 5, Frames: []string{hostile[2], hostile[3], hostile[4], hostile[5], "main"}, N: 1},
	{PID: 20, TID: 21, MS: 6, Frames: []string{hostile[6], hostile[7], hostile[8], "main"}, N: 2},
	{PID: 20, TID: 20, MS: 7, Frames: []string{"k_idle"}, N: 1},
}

// writeTestCapture writes a capture of testStacks: a symbol bundle names
// every address, pid 10 runs in podman container "web" with ns pid 1, its
// binary has a build-id.
func writeTestCapture(t testing.TB) []byte {
	t.Helper()
	return testcaptures.CPUOf(t, testStacks)
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
		name   string
		o      analyze.ViewOptions
		by     analyze.GroupBy
		noRoot bool
	}{
		{"all", analyze.ViewOptions{}, analyze.GroupNone, false},
		{"no-process-root", analyze.ViewOptions{}, analyze.GroupNone, true},
		{"by-process", analyze.ViewOptions{}, analyze.GroupProcess, false},
		{"hide-kernel", analyze.ViewOptions{HideKernel: true}, analyze.GroupNone, false},
		{"focus", analyze.ViewOptions{Focus: "work"}, analyze.GroupThread, false},
		{"pid", analyze.ViewOptions{Filter: analyze.Filter{PIDs: []int32{20}}}, analyze.GroupContainer, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := loadTestView(t, tc.o)
			out := generate(t, v, FormatFolded, Options{By: tc.by, NoProcessRoot: tc.noRoot})
			skip := 1 // the group's, by default the comm
			if tc.noRoot {
				skip = 0
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
	// stackcollapse-perf.pl's default: the comm at the root.
	out = string(generate(t, v, FormatFolded, Options{}))
	if !strings.HasPrefix(out, "evil;") || !strings.Contains(out, "\nserver;main;work;hot 5\n") {
		t.Errorf("no comm root frame by default:\n%s", out)
	}
	out = string(generate(t, v, FormatFolded, Options{NoProcessRoot: true}))
	if !strings.Contains(out, "\nmain;work;hot 5\n") || strings.Contains(out, "server;") {
		t.Errorf("a root frame with NoProcessRoot:\n%s", out)
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
