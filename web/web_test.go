package web

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"nsprof/analyze"
	"nsprof/internal/testcaptures"
	"nsprof/report"
)

// startServer loads data with its timeline and serves it on loopback
// until the test ends.
func startServer(t *testing.T, data []byte, o Options) (*Server, *analyze.Profile) {
	t.Helper()
	p, err := analyze.LoadBytes(data, analyze.LoadOptions{Timeline: true, NoHostFiles: true})
	if err != nil {
		t.Fatal(err)
	}
	if o.File == "" {
		o.File = testcaptures.Hostile[0] + ".syscap"
	}
	s, err := New(p, o)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Serve(t.Context()) }()
	t.Cleanup(func() {
		s.Close()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return s, p
}

// get requests url with Host host ("" for the URL's) and returns the
// answer and its body.
func get(t testing.TB, method, url, host string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if host != "" {
		req.Host = host
	}
	c := &http.Client{Timeout: 30 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, body
}

// TestRefusals checks that only requests with the token, an IP or
// localhost Host on the server's port, and GET or HEAD get an answer.
func TestRefusals(t *testing.T) {
	s, _ := startServer(t, testcaptures.Web(t), Options{})
	base := s.URL()
	root := strings.TrimSuffix(base, s.token+"/")
	_, port, _ := net.SplitHostPort(s.Addr().String())
	other := strings.Repeat("0", len(s.token))
	for _, c := range []struct {
		name, method, url, host string
		want                    int
	}{
		{"page", "GET", base, "", 200},
		{"api", "GET", base + "api/meta", "", 200},
		{"HEAD", "HEAD", base + "app.js", "", 200},
		{"localhost", "GET", base + "api/meta", "localhost:" + port, 200},
		{"no token", "GET", root, "", 403},
		{"no token api", "GET", root + "api/meta", "", 403},
		{"asset without token", "GET", root + "app.js", "", 403},
		{"wrong token", "GET", root + other + "/api/meta", "", 403},
		{"token prefix", "GET", root + s.token[:len(s.token)-1] + "/api/meta", "", 403},
		{"token and more", "GET", root + s.token + "0/api/meta", "", 403},
		{"token in query", "GET", root + "api/meta?token=" + s.token, "", 403},
		{"rebound name", "GET", base + "api/meta", "attacker.example:" + port, 403},
		{"other port", "GET", base + "api/meta", "127.0.0.1:1", 403},
		{"no port", "GET", base + "api/meta", "127.0.0.1", 403},
		{"POST", "POST", base + "api/meta", "", 405},
		{"unknown path", "GET", base + "api/nothing", "", 404},
		{"bad range", "GET", base + "api/flame?since=5&until=2", "", 400},
		{"bad value", "GET", base + "api/flame?value=99", "", 400},
	} {
		resp, body := get(t, c.method, c.url, c.host)
		if resp.StatusCode != c.want {
			t.Errorf("%s: %s %s (Host %q): status %d, want %d: %.200s", c.name, c.method, c.url, c.host, resp.StatusCode, c.want, body)
		}
		if c.want == 403 && bytes.Contains(body, []byte("server")) {
			t.Errorf("%s: a refusal tells of the profile: %.200s", c.name, body)
		}
		for k, v := range map[string]string{
			"Content-Security-Policy": "default-src 'none'; script-src 'self'; style-src 'self';",
			"X-Content-Type-Options":  "nosniff",
			"Referrer-Policy":         "no-referrer",
			"X-Frame-Options":         "DENY",
		} {
			if got := resp.Header.Get(k); !strings.HasPrefix(got, v) || strings.Contains(got, "unsafe") {
				t.Errorf("%s: header %s: %q, want %q...", c.name, k, got, v)
			}
		}
	}
	resp, _ := get(t, "GET", base+"app.js", "")
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/javascript") {
		t.Errorf("app.js: Content-Type %q", ct)
	}
}

// TestHostileNames checks that the API's answers hold the capture's
// hostile names intact as JSON strings, with no character that HTML
// reads as markup, and that the page has no inline script.
func TestHostileNames(t *testing.T) {
	s, _ := startServer(t, testcaptures.Web(t), Options{})
	for _, path := range []string{"api/meta", "api/timeline", "api/flame", "api/top", "api/flame?invert=1", "api/logs"} {
		resp, body := get(t, "GET", s.URL()+path, "")
		if resp.StatusCode != 200 {
			t.Fatalf("%s: %d %s", path, resp.StatusCode, body)
		}
		if ct := resp.Header.Get("Content-Type"); ct != "application/json; charset=utf-8" {
			t.Errorf("%s: Content-Type %q", path, ct)
		}
		if i := bytes.IndexAny(body, "<>&\x01\x1b"); i >= 0 {
			t.Errorf("%s: raw %q in the JSON at %d: %.80s", path, body[i], i, body[max(0, i-40):])
		}
		var doc any
		if err := json.Unmarshal(body, &doc); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		// Marks and counters cut names (to 24 and 32 bytes): the markup
		// is in the first bytes.
		for _, h := range []string{"</text><script>", testcaptures.Hostile[1], testcaptures.Hostile[4]} {
			if path != "api/meta" && !(path == "api/logs" && h == testcaptures.Hostile[1]) && !strings.Contains(fmt.Sprint(doc), h) {
				t.Errorf("%s: hostile name %q missing", path, h)
			}
		}
	}
	_, page := get(t, "GET", s.URL(), "")
	if bytes.Contains(page, []byte("<script>")) || bytes.Contains(page, []byte("onclick")) || bytes.Contains(page, []byte("onload")) {
		t.Errorf("the page has inline script")
	}
}

// reportTotal returns the total of the call tree `nsprof report --since
// --until --tree --format json [--value]` prints for [since, until) of p,
// weighed by sample type value.
func reportTotal(t *testing.T, p *analyze.Profile, since, until int64, value int) int {
	t.Helper()
	return reportFiltered(t, p, analyze.Filter{Since: time.Duration(since), Until: time.Duration(until)}, value)
}

// reportFiltered returns the total of the call tree `nsprof report --tree
// --format json` prints for the samples of p f keeps (--since, --until,
// --pid, --tid, --container), weighed by sample type value.
func reportFiltered(t *testing.T, p *analyze.Profile, f analyze.Filter, value int) int {
	t.Helper()
	vo := analyze.ViewOptions{Filter: f, Value: value}
	v, err := p.View(vo)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := report.Generate(&buf, report.Data{View: v}, report.Options{View: report.ViewTree, Format: report.JSON, Select: vo}); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Groups []struct {
			Tree struct {
				Total int `json:"total"`
			} `json:"tree"`
		} `json:"groups"`
	}
	if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Groups) != 1 {
		t.Fatalf("report: %d groups", len(doc.Groups))
	}
	return doc.Groups[0].Tree.Total
}

// TestFlameTotals checks the flame graph's and the function table's
// totals for ranges and sample types against nsprof report's.
func TestFlameTotals(t *testing.T) {
	s, p := startServer(t, testcaptures.Web(t), Options{})
	for value := range p.SampleTypes {
		for _, r := range [][2]int64{{0, 0}, {0, 3e6}, {2_500_000, 7_000_001}, {9e6, 0}, {9_900_000, 9_950_000}} {
			want := reportTotal(t, p, r[0], r[1], value)
			q := fmt.Sprintf("?value=%d&since=%d&until=%d", value, r[0], r[1])
			for _, path := range []string{"api/flame", "api/flame?invert=1&", "api/top"} {
				url := s.URL() + path + q
				if strings.HasSuffix(path, "&") {
					url = s.URL() + path + q[1:]
				}
				_, body := get(t, "GET", url, "")
				var doc struct {
					Total int `json:"total"`
				}
				if err := json.Unmarshal(body, &doc); err != nil {
					t.Fatalf("%s: %v: %s", url, err, body)
				}
				if doc.Total != want {
					t.Errorf("%s: total %d, report says %d", url, doc.Total, want)
				}
			}
		}
	}
	if reportTotal(t, p, 2_500_000, 7_000_001, 0) == reportTotal(t, p, 0, 0, 0) {
		t.Error("the range selects every sample: the test cannot tell a filter from none")
	}
}

// TestFilterTotals checks the flame graph's, the call tree's and the
// function table's totals for a process, a thread and a container, with
// and without a range, against nsprof report's for the same filter, and
// that a bad filter is refused.
func TestFilterTotals(t *testing.T) {
	s, p := startServer(t, testcaptures.Web(t), Options{})
	cpu, err := p.ValueIndex("cpu")
	if err != nil {
		t.Fatal(err)
	}
	whole := reportTotal(t, p, 0, 0, 0)
	for _, c := range []struct {
		query string
		f     analyze.Filter
	}{
		{"pid=10", analyze.Filter{PIDs: []int32{10}}},
		{"pid=20", analyze.Filter{PIDs: []int32{20}}},
		{"pid=10&tid=11", analyze.Filter{PIDs: []int32{10}, TIDs: []int32{11}}},
		{"tid=21,10", analyze.Filter{TIDs: []int32{21, 10}}},
		{"container=" + url.QueryEscape("podman:db (0123456789ab)"), analyze.Filter{Container: "podman:db (0123456789ab)"}},
		{"container=web&since=2500000&until=7000001", analyze.Filter{Container: "web", Since: 2_500_000, Until: 7_000_001}},
		{"pid=20&since=2500000", analyze.Filter{PIDs: []int32{20}, Since: 2_500_000}},
	} {
		for _, value := range []int{0, cpu} {
			want := reportFiltered(t, p, c.f, value)
			if want == 0 || value == 0 && want == whole {
				t.Errorf("%s: report's total %d of %d: not a test of the filter", c.query, want, whole)
			}
			for _, path := range []string{"api/flame?", "api/flame?invert=1&", "api/top?"} {
				url := s.URL() + path + c.query + fmt.Sprintf("&value=%d", value)
				resp, body := get(t, "GET", url, "")
				var doc struct {
					Total  int `json:"total"`
					Filter struct {
						PIDs      []int32 `json:"pids"`
						Container string  `json:"container"`
					} `json:"filter"`
				}
				if err := json.Unmarshal(body, &doc); err != nil || resp.StatusCode != 200 {
					t.Fatalf("%s: %d %v: %s", url, resp.StatusCode, err, body)
				}
				if doc.Total != want {
					t.Errorf("%s: total %d, report says %d", url, doc.Total, want)
				}
				if fmt.Sprint(doc.Filter.PIDs) != fmt.Sprint(c.f.PIDs) && len(c.f.PIDs) > 0 || doc.Filter.Container != c.f.Container {
					t.Errorf("%s: the answer names the filter %+v", url, doc.Filter)
				}
			}
		}
	}
	// The logs of pid 10 are none; pid 20 has the capture's one.
	for q, want := range map[string]int{"pid=10": 0, "pid=20": 1, "container=db": 1, "container=web": 0, "tid=10": 1} {
		_, body := get(t, "GET", s.URL()+"api/logs?"+q, "")
		var doc struct {
			Total int `json:"total"`
		}
		if err := json.Unmarshal(body, &doc); err != nil || doc.Total != want {
			t.Errorf("api/logs?%s: %d logs (%v), want %d: %s", q, doc.Total, err, want, body)
		}
	}
	for _, q := range []string{"pid=x", "pid=-1", "tid=1,,2", "pid=99999999999", "comm=(", "container=" + strings.Repeat("a", 300)} {
		if resp, body := get(t, "GET", s.URL()+"api/flame?"+q, ""); resp.StatusCode != 400 || !bytes.Contains(body, []byte("parameter")) {
			t.Errorf("api/flame?%s: %d %s, want 400 naming the parameter", q, resp.StatusCode, body)
		}
	}
}

// TestListenWarning checks that a server on a non-loopback address warns
// and that one on loopback does not.
func TestListenWarning(t *testing.T) {
	for _, c := range []struct {
		listen string
		warn   bool
	}{{"", false}, {"127.0.0.1:0", false}, {"[::1]:0", false}, {"0.0.0.0:0", true}, {"[::]:0", true}} {
		p, err := analyze.LoadBytes(testcaptures.Web(t), analyze.LoadOptions{Timeline: true, NoHostFiles: true})
		if err != nil {
			t.Fatal(err)
		}
		s, err := New(p, Options{Listen: c.listen})
		if err != nil {
			if strings.Contains(c.listen, "::") {
				t.Logf("%s: %v (no IPv6 here)", c.listen, err)
				continue
			}
			t.Fatal(err)
		}
		w := s.Warning()
		s.Close()
		s.ln.Close()
		if (w != "") != c.warn {
			t.Errorf("--listen %q: warning %q, want one: %v", c.listen, w, c.warn)
		}
	}
}

// TestSourceLines checks that the function table says where a function
// spent its time (file:line) and that the flame graph shows the calls
// the recording found inlined as frames.
func TestSourceLines(t *testing.T) {
	s, _ := startServer(t, testcaptures.Web(t), Options{})
	_, body := get(t, "GET", s.URL()+"api/top", "")
	var top struct {
		Functions []struct {
			Function string `json:"function"`
			Self     int    `json:"self"`
			Source   string `json:"source"`
		} `json:"functions"`
	}
	if err := json.Unmarshal(body, &top); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"step": "/src/server/step.h:12", "hot": "/src/server/hot.c", "work": ""}
	for _, f := range top.Functions {
		if w, ok := want[f.Function]; ok {
			if f.Source != w {
				t.Errorf("%s: source %q, want %q", f.Function, f.Source, w)
			}
			delete(want, f.Function)
		}
	}
	if len(want) > 0 {
		t.Errorf("functions missing from the table: %v", want)
	}
	// The flame graph and call trees: hot's time went through hot.c:42,
	// where step, inlined, was at step.h:12; in the callers tree, step
	// is a root, inlined, with hot its caller.
	type node struct {
		Name     string  `json:"function"`
		Source   string  `json:"source"`
		Inlined  bool    `json:"inlined"`
		Children []*node `json:"children"`
	}
	for _, c := range []struct {
		query string
		path  []string
	}{
		{"", []string{"main", "work", "hot /src/server/hot.c:42", "step /src/server/step.h:12 inlined"}},
		{"?invert=1", []string{"step /src/server/step.h:12 inlined", "hot /src/server/hot.c:42", "work", "main"}},
	} {
		_, body = get(t, "GET", s.URL()+"api/flame"+c.query, "")
		var flame struct {
			Root *node `json:"root"`
		}
		if err := json.Unmarshal(body, &flame); err != nil {
			t.Fatal(err)
		}
		var got []string
		var walk func(n *node)
		walk = func(n *node) {
			for _, ch := range n.Children {
				if ch.Name == c.path[len(got)][:strings.IndexByte(c.path[len(got)]+" ", ' ')] {
					got = append(got, strings.TrimSpace(strings.Join([]string{ch.Name, ch.Source, map[bool]string{true: "inlined"}[ch.Inlined]}, " ")))
					if len(got) < len(c.path) {
						walk(ch)
					}
					return
				}
			}
		}
		walk(flame.Root)
		if strings.Join(got, " / ") != strings.Join(c.path, " / ") {
			t.Errorf("api/flame%s: the path to hot is %q, want %q", c.query, got, c.path)
		}
	}
}

// TestPprofUI checks that google/pprof's web UI serves a selection under
// the token: its function table holds the selection's functions, the
// hostile names escaped, and a bad selection is refused.
func TestPprofUI(t *testing.T) {
	s, _ := startServer(t, testcaptures.Web(t), Options{})
	resp, body := get(t, "GET", s.URL()+"pprof/2500000-7000001-0/top", "")
	if resp.StatusCode != 200 {
		t.Fatalf("pprof top: %d %s", resp.StatusCode, body)
	}
	// pprof's page holds the names as JSON in a script, escaped by
	// html/template.
	for _, want := range []string{`"hot"`, `"\u003c/text\u003e\u003cscript\u003ealert(1)\u003c/script\u003e"`} {
		if !bytes.Contains(body, []byte(want)) {
			i := bytes.Index(body, []byte("alert"))
			t.Errorf("pprof top lacks %q: %.300s", want, body[max(0, i-100):])
		}
	}
	if bytes.Contains(body, []byte("<script>alert")) {
		t.Error("pprof top holds a hostile name as markup")
	}
	if csp := resp.Header.Get("Content-Security-Policy"); !strings.HasPrefix(csp, "default-src 'none'") {
		t.Errorf("pprof top: CSP %q", csp)
	}
	for _, c := range []struct {
		path string
		want int
	}{{"pprof/2500000-7000001-0/flamegraph", 200}, {"pprof/5-2-0/top", 400}, {"pprof/0-0-99/top", 400}, {"pprof/x/top", 400}, {"pprof/0-0-0/nothing", 404}} {
		if resp, body := get(t, "GET", s.URL()+c.path, ""); resp.StatusCode != c.want {
			t.Errorf("%s: %d, want %d: %.200s", c.path, resp.StatusCode, c.want, body)
		}
	}
	// pprof's graph view: its SVG, drawn by Graphviz's dot (installed
	// by scripts/install-deps.sh).
	if resp, body := get(t, "GET", s.URL()+"pprof/2500000-7000001-0/graph", ""); resp.StatusCode != 200 || !bytes.Contains(body, []byte("<svg")) || !bytes.Contains(body, []byte("hot")) {
		t.Errorf("pprof graph: %d (%s), want an SVG naming hot: %.300s", resp.StatusCode, resp.Header.Get("Location"), body)
	}
	// A filter: pid 20's functions only.
	key := "0-0-0-" + base64.RawURLEncoding.EncodeToString([]byte("pid=20"))
	if resp, body := get(t, "GET", s.URL()+"pprof/"+key+"/top", ""); resp.StatusCode != 200 || bytes.Contains(body, []byte(`"hot"`)) || !bytes.Contains(body, []byte(`"main"`)) {
		t.Errorf("pprof/%s/top (pid 20): %d, with hot or without main: %.300s", key, resp.StatusCode, body)
	}
	for _, bad := range []string{"0-0-0-!!", "0-0-0-" + base64.RawURLEncoding.EncodeToString([]byte("pid=x"))} {
		if resp, body := get(t, "GET", s.URL()+"pprof/"+bad+"/top", ""); resp.StatusCode != 400 {
			t.Errorf("pprof/%s/top: %d, want 400: %.200s", bad, resp.StatusCode, body)
		}
	}
	root := strings.TrimSuffix(s.URL(), s.token+"/")
	if resp, _ := get(t, "GET", root+"pprof/0-0-0/top", ""); resp.StatusCode != 403 {
		t.Errorf("pprof without the token: %d", resp.StatusCode)
	}
}

// reportTimeline decodes into doc the JSON of timeline view v that
// `nsprof report` gives for filter f (its pids and range).
func reportTimeline(t *testing.T, p *analyze.Profile, v report.View, f analyze.Filter, doc any) {
	t.Helper()
	var buf bytes.Buffer
	if err := report.Generate(&buf, report.Data{Timeline: p.Timeline}, report.Options{View: v, Format: report.JSON, Select: analyze.ViewOptions{Filter: f}}); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(buf.Bytes(), doc); err != nil {
		t.Fatal(err)
	}
}

// reportMarks returns the marks statistics `nsprof report --marks --json`
// gives for filter f.
func reportMarks(t *testing.T, p *analyze.Profile, f analyze.Filter) []analyze.MarkStat {
	t.Helper()
	var doc struct {
		Marks []analyze.MarkStat `json:"marks"`
	}
	reportTimeline(t, p, report.ViewMarks, f, &doc)
	return doc.Marks
}

// TestMarkStats checks that api/marks gives the marks of a range and
// process as report --marks does, by group and name, and selects by
// container as the other views do (a mark has no thread: tid selects
// nothing out).
func TestMarkStats(t *testing.T) {
	s, p := startServer(t, testcaptures.Web(t), Options{})
	marks := func(q string) (int, []analyze.MarkStat) {
		t.Helper()
		resp, body := get(t, "GET", s.URL()+"api/marks?"+q, "")
		var doc struct {
			Total   int                `json:"total"`
			Stats   []analyze.MarkStat `json:"stats"`
			Longest []markDoc          `json:"longest"`
		}
		if err := json.Unmarshal(body, &doc); err != nil || resp.StatusCode != 200 {
			t.Fatalf("api/marks?%s: %d %v: %s", q, resp.StatusCode, err, body)
		}
		n := 0
		longest := map[string]int64{}
		for _, m := range doc.Stats {
			n += m.Count
			longest[m.Group+":"+m.Name] = m.Max
		}
		if n != doc.Total {
			t.Errorf("api/marks?%s: total %d, the groups count %d", q, doc.Total, n)
		}
		// The longest, longest first: as many as the marks, each as long
		// as its group's longest at most, the first the longest of all.
		if len(doc.Longest) != min(n, maxLongestMarks) {
			t.Errorf("api/marks?%s: %d longest marks of %d", q, len(doc.Longest), n)
		}
		for i, m := range doc.Longest {
			if i > 0 && m.Dur > doc.Longest[i-1].Dur || m.Dur > longest[m.Group+":"+m.Name] {
				t.Errorf("api/marks?%s: longest mark %d, %+v, out of order or longer than its group's", q, i, m)
			}
		}
		if len(doc.Longest) > 0 {
			most := int64(0)
			for _, l := range longest {
				most = max(most, l)
			}
			if doc.Longest[0].Dur != most {
				t.Errorf("api/marks?%s: the longest mark lasts %d ns, the longest of the groups %d", q, doc.Longest[0].Dur, most)
			}
		}
		return doc.Total, doc.Stats
	}
	for _, c := range []struct {
		query string
		f     analyze.Filter
		want  int
	}{
		{"", analyze.Filter{}, 4},
		{"pid=10", analyze.Filter{PIDs: []int32{10}}, 3},
		{"pid=20", analyze.Filter{PIDs: []int32{20}}, 1},
		{"since=2500000", analyze.Filter{Since: 2_500_000}, 2},
		{"pid=10&since=1000000&until=7000000", analyze.Filter{PIDs: []int32{10}, Since: 1_000_000, Until: 7_000_000}, 2},
		{"tid=11", analyze.Filter{}, 4},
	} {
		n, got := marks(c.query)
		want := reportMarks(t, p, c.f)
		if n != c.want || fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("api/marks?%s: %d marks %+v; want %d, report's %+v", c.query, n, got, c.want, want)
		}
	}
	for q, same := range map[string]string{"container=web": "pid=10", "container=" + url.QueryEscape("podman:db (0123456789ab)"): "pid=20"} {
		n, got := marks(q)
		m, want := marks(same)
		if n == 0 || n != m || fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("api/marks?%s: %d marks %+v; want those of %s, %d %+v", q, n, got, same, m, want)
		}
	}
}

// reportCounters returns the counter statistics `nsprof report
// --counters --json` gives for the range of filter f.
func reportCounters(t *testing.T, p *analyze.Profile, f analyze.Filter) []analyze.CounterStat {
	t.Helper()
	var doc struct {
		Counters []analyze.CounterStat `json:"counters"`
	}
	reportTimeline(t, p, report.ViewCounters, f, &doc)
	return doc.Counters
}

// TestCounterStats checks that api/counters gives each counter's updates
// in a range as report --counters does; the process filter does not
// apply to the machine's counters.
func TestCounterStats(t *testing.T) {
	s, p := startServer(t, testcaptures.Web(t), Options{})
	for _, c := range []struct {
		query string
		f     analyze.Filter
	}{
		{"", analyze.Filter{}},
		{"since=2500000&until=7000001", analyze.Filter{Since: 2_500_000, Until: 7_000_001}},
		{"since=8000000", analyze.Filter{Since: 8_000_000}},
		{"pid=10&until=3000000", analyze.Filter{Until: 3_000_000}},
	} {
		resp, body := get(t, "GET", s.URL()+"api/counters?"+c.query, "")
		var doc struct {
			Counters []analyze.CounterStat `json:"counters"`
		}
		if err := json.Unmarshal(body, &doc); err != nil || resp.StatusCode != 200 {
			t.Fatalf("api/counters?%s: %d %v: %s", c.query, resp.StatusCode, err, body)
		}
		want := reportCounters(t, p, c.f)
		if len(want) == 0 || fmt.Sprint(doc.Counters) != fmt.Sprint(want) {
			t.Errorf("api/counters?%s: %+v, want report's %+v", c.query, doc.Counters, want)
		}
		whole := reportCounters(t, p, analyze.Filter{})
		if c.query != "" && fmt.Sprint(want) == fmt.Sprint(whole) {
			t.Errorf("%s: the range's counters are the whole capture's: not a test of the range", c.query)
		}
	}
}

// TestSummary checks that api/summary is report --summary --json's
// document of the capture.
func TestSummary(t *testing.T) {
	s, p := startServer(t, testcaptures.Web(t), Options{File: "web.syscap"})
	resp, body := get(t, "GET", s.URL()+"api/summary", "")
	var got, want map[string]any
	if err := json.Unmarshal(body, &got); err != nil || resp.StatusCode != 200 {
		t.Fatalf("api/summary: %d %v: %s", resp.StatusCode, err, body)
	}
	var buf bytes.Buffer
	if err := report.Generate(&buf, report.Data{Timeline: p.Timeline}, report.Options{View: report.ViewSummary, Format: report.JSON, File: "web.syscap"}); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(buf.Bytes(), &want); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("api/summary:\n%v\nreport --summary --json:\n%v", got, want)
	}
	if frames, _ := got["frames"].(map[string]any); frames["SAMPLE"] == nil {
		t.Errorf("api/summary has no SAMPLE frames: %v", got["frames"])
	}
}

// TestTimelineHeap checks that the timeline of a capture with allocations
// has a track of the heap they kept, which peaks at report --memory's
// peak, and that one without allocations has none.
func TestTimelineHeap(t *testing.T) {
	heapTrack := func(s *Server) ([][2]float64, bool) {
		t.Helper()
		_, body := get(t, "GET", s.URL()+"api/timeline?buckets=100", "")
		var doc struct {
			Counters []struct {
				Category string       `json:"category"`
				Name     string       `json:"name"`
				Points   [][2]float64 `json:"points"`
			} `json:"counters"`
		}
		if err := json.Unmarshal(body, &doc); err != nil {
			t.Fatalf("api/timeline: %v: %s", err, body)
		}
		for _, c := range doc.Counters {
			if c.Category == heapCategory && c.Name == heapName {
				return c.Points, true
			}
		}
		return nil, false
	}
	s, p := startServer(t, testcaptures.Memprof(t), Options{})
	points, ok := heapTrack(s)
	if !ok || len(points) == 0 {
		t.Fatal("a capture with allocations has no heap track")
	}
	vi, err := p.ValueIndex(analyze.AllocSpaceType.Type)
	if err != nil {
		t.Fatal(err)
	}
	v, err := p.View(analyze.ViewOptions{Value: vi})
	if err != nil {
		t.Fatal(err)
	}
	peak := 0.0
	for _, pt := range points {
		peak = max(peak, pt[1])
	}
	if want := v.Heap().Peak; int64(peak) != want || want == 0 {
		t.Errorf("the heap track peaks at %v bytes, report --memory's peak is %d", peak, want)
	}
	s, _ = startServer(t, testcaptures.Web(t), Options{})
	if _, ok := heapTrack(s); ok {
		t.Error("a capture without allocations has a heap track")
	}
}
