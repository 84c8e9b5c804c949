package web

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"nsprof/analyze"
	"nsprof/capture"
	"nsprof/internal/testcaptures"
	"nsprof/internal/testutils"
)

// waitFor polls the page until the JavaScript expression cond is true.
func waitFor(t testing.TB, d *testutils.DevTools, cond string) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; {
		var ok bool
		err := d.TryEval("!!("+cond+")", &ok)
		if err != nil && !strings.Contains(err.Error(), "context") {
			t.Fatal(err)
		}
		if ok {
			return
		}
		if time.Now().After(deadline) {
			var status string
			d.Eval(`document.getElementById("status").textContent`, &status)
			t.Fatalf("not %s after 30 s (status %q)", cond, status)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// mouse dispatches mouse events of the left button at x, y.
func mouse(d *testutils.DevTools, typ string, x, y float64) {
	d.Call("Input.dispatchMouseEvent", map[string]any{"type": typ, "x": x, "y": y, "button": "left", "buttons": 1, "clickCount": 1})
}

// screenshot saves the page's element id as a PNG in dir and checks that
// it is an image of more than one colour.
func screenshot(t *testing.T, d *testutils.DevTools, dir, id string) {
	t.Helper()
	var r []float64
	d.Eval(fmt.Sprintf(`(function () { var b = document.getElementById(%q).getBoundingClientRect(); return [b.x + scrollX, b.y + scrollY, b.width, b.height]; })()`, id), &r)
	var res struct {
		Data string `json:"data"`
	}
	raw := d.Call("Page.captureScreenshot", map[string]any{"format": "png", "captureBeyondViewport": true,
		"clip": map[string]any{"x": r[0], "y": r[1], "width": r[2], "height": r[3], "scale": 1}})
	if err := json.Unmarshal(raw, &res); err != nil {
		t.Fatal(err)
	}
	b, err := base64.StdEncoding.DecodeString(res.Data)
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("screenshot of #%s: %v", id, err)
	}
	if colours(img) < 3 {
		t.Errorf("screenshot of #%s (%v) has %d colours: blank", id, img.Bounds(), colours(img))
	}
	path := filepath.Join(dir, id+".png")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("#%s: %s (%dx%d)", id, path, img.Bounds().Dx(), img.Bounds().Dy())
}

// colours counts the distinct colours of img, up to 100.
func colours(img image.Image) int {
	seen := map[[4]uint32]bool{}
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y += 2 {
		for x := b.Min.X; x < b.Max.X; x += 2 {
			r, g, bl, a := img.At(x, y).RGBA()
			seen[[4]uint32{r, g, bl, a}] = true
			if len(seen) >= 100 {
				return len(seen)
			}
		}
	}
	return len(seen)
}

// checkCountersTable checks that the page's counters table lists want,
// the counters report --counters gives for the selection: a row per
// counter with its updates and largest value.
func checkCountersTable(t *testing.T, d *testutils.DevTools, want []analyze.CounterStat) {
	t.Helper()
	var rows []string
	d.Eval(`Array.from(document.querySelectorAll("#counters tbody tr")).map(r => [2, 5].map(i => r.cells[i].textContent).join("|"))`, &rows)
	var wantRows []string
	for _, c := range want {
		m := "" // as app.js writes values: integers whole, others with two decimals
		switch {
		case c.Count > 0 && c.Max == math.Trunc(c.Max):
			m = strconv.FormatFloat(c.Max, 'f', -1, 64)
		case c.Count > 0:
			m = strconv.FormatFloat(c.Max, 'f', 2, 64)
		}
		wantRows = append(wantRows, fmt.Sprintf("%d|%s", c.Count, m))
	}
	if strings.Join(rows, "\n") != strings.Join(wantRows, "\n") || len(want) == 0 {
		t.Errorf("counters table (updates|max) %q, want report's %q", rows, wantRows)
	}
}

// checkMarksTable checks that the page's marks table lists want, the
// marks report --marks gives for the selection: a row per group and name
// with its count, and the count of the range.
func checkMarksTable(t *testing.T, d *testutils.DevTools, want []analyze.MarkStat) {
	t.Helper()
	var rows []string
	d.Eval(`Array.from(document.querySelectorAll("#marks tbody tr")).map(r => Array.from(r.cells).slice(0, 3).map(c => c.textContent).join("|"))`, &rows)
	var info string
	d.Eval(`document.getElementById("marks-info").textContent`, &info)
	var wantRows []string
	n := 0
	// The page shows control characters as \xNN (app.js's shown).
	shown := func(s string) string {
		var b strings.Builder
		for _, r := range s {
			if r < 0x20 || r == 0x7f {
				fmt.Fprintf(&b, `\x%02x`, r)
			} else {
				b.WriteRune(r)
			}
		}
		return b.String()
	}
	for _, m := range want {
		wantRows = append(wantRows, fmt.Sprintf("%s|%s|%d", shown(m.Group), shown(m.Name), m.Count))
		n += m.Count
	}
	if strings.Join(rows, "\n") != strings.Join(wantRows, "\n") || info != fmt.Sprintf("(%d in the range)", n) {
		t.Errorf("marks table %q %s, want report's %q (%d in the range)", rows, info, wantRows, n)
	}
	if len(want) == 0 {
		t.Error("no marks: not a test of the table")
	}
}

// TestBrowser opens the page of a capture with marks, counters and two
// processes in two containers in headless Chromium, drags over the
// timeline as a user does, and checks that the flame graph and function
// table then show the range nsprof report shows for the same
// --since/--until, that hovering a mark tells its duration, that hostile
// names are text, and saves a screenshot of each view.
func TestBrowser(t *testing.T) {
	chromium := testutils.LookPathOrSkip(t, "chromium")
	s, p := startServer(t, testcaptures.Web(t), Options{})
	d := testutils.OpenChromium(t, chromium, s.URL(), `document.body && document.body.dataset.ready === "1"`)
	shots := t.ArtifactDir()

	// The whole capture.
	var total int
	d.Eval(`+document.getElementById("flame-total").dataset.total`, &total)
	if want := reportTotal(t, p, 0, 0, 0); total != want {
		t.Errorf("whole capture: the flame graph's total is %d, report's %d", total, want)
	}
	var lanes []string
	d.Eval(`nsprof.state.layout.rows.map(r => r.kind + " " + r.label.trim())`, &lanes)
	got := strings.Join(lanes, "\n")
	for _, want := range []string{"head container podman:web (abcdef012345)", "head container podman:db (0123456789ab)", "lane server [10]", "lane server (11)",
		"lane " + testcaptures.Hostile[0] + " [20]", "marks gtk:frame", "counter CPU Percent / Total"} {
		if !strings.Contains(got, want) {
			t.Errorf("timeline rows lack %q:\n%s", want, got)
		}
	}
	screenshot(t, d, shots, "procs-view")
	checkMarksTable(t, d, reportMarks(t, p, analyze.Filter{}))
	checkCountersTable(t, d, reportCounters(t, p, analyze.Filter{}))
	// The capture's facts: its sample count, and its frames by type.
	waitFor(t, d, `document.querySelectorAll("#frames tbody tr").length > 0`)
	var facts []string
	d.Eval(`Array.from(document.querySelectorAll("#capture tr, #frames tbody tr")).map(r => Array.from(r.cells).map(c => c.textContent).join("|"))`, &facts)
	factsText := strings.Join(facts, "\n")
	screenshot(t, d, shots, "capture-view")
	for _, want := range []string{fmt.Sprintf("Samples|%d", p.Timeline.Samples), fmt.Sprintf("SAMPLE|%d|", p.Timeline.Frames[capture.TypeSample].Count)} {
		if !strings.Contains(factsText, want) {
			t.Errorf("the capture's facts lack %q:\n%s", want, factsText)
		}
	}

	var tip string
	var at []float64
	// Hover step in the flame graph, then its row in the call tree: both
	// say it was inlined in hot and where (the Web capture's lines).
	for _, sel := range []string{"#flame .fn", "#calltree .ct-row"} {
		d.Eval(fmt.Sprintf(`(function () {
			var e = Array.from(document.querySelectorAll(%q)).find(e => e.textContent.startsWith("step") || (e.querySelector(".fname") || {}).textContent === "step");
			if (!e) return [];
			e.scrollIntoView({block: "center"});
			var b = e.getBoundingClientRect();
			return [b.x + Math.min(5, b.width / 2), b.y + b.height / 2];
		})()`, sel), &at)
		if len(at) != 2 {
			t.Errorf("%s: no node of step", sel)
			continue
		}
		mouse(d, "mouseMoved", at[0], at[1])
		d.Eval(`document.getElementById("tip").hidden ? "" : document.getElementById("tip").textContent`, &tip)
		if !strings.HasPrefix(tip, "step\n") || !strings.Contains(tip, "\ninlined in its caller\nat /src/server/step.h:12") {
			t.Errorf("hovering step in %s shows %q, want it inlined at step.h:12", sel, tip)
		}
	}
	var hotRow string
	d.Eval(`Array.from(document.querySelectorAll("#calltree .ct-row")).map(r => r.textContent).find(t => t.includes("hot")) || ""`, &hotRow)
	if !strings.Contains(hotRow, "/src/server/hot.c:42") {
		t.Errorf("the call tree's row of hot: %q, want its source line hot.c:42", hotRow)
	}
	screenshot(t, d, shots, "tree-view")
	d.Eval(`window.scrollTo(0, 0); true`, new(bool))

	// Hover the second gtk:frame mark (4 ms, 500 µs).
	d.Eval(`(function () {
		var r = nsprof.state.layout.rows.find(r => r.kind === "marks" && r.label === "gtk:frame"), m = r.marks[1];
		var b = document.getElementById("tl").getBoundingClientRect();
		var x = 230 + (m.start_ns + m.dur_ns / 2) / nsprof.state.meta.duration_ns * (b.width - 238);
		return [b.x + x, b.y + r.y + r.h / 2];
	})()`, &at)
	d.Call("Input.dispatchMouseEvent", map[string]any{"type": "mouseMoved", "x": at[0], "y": at[1]})
	d.Eval(`document.getElementById("tip").textContent`, &tip)

	if !strings.Contains(tip, "gtk:frame") || !strings.Contains(tip, "duration 500.0 µs") || !strings.Contains(tip, "frame 4") {
		t.Errorf("hovering the mark at 4 ms shows %q", tip)
	}

	// Drag over the timeline from 30% to 65% of the capture.
	var box []float64
	d.Eval(`(function () { var b = document.getElementById("tl").getBoundingClientRect(); return [b.x, b.y, b.width]; })()`, &box)
	plot := box[2] - 238
	x0, x1, y := box[0]+230+0.30*plot, box[0]+230+0.65*plot, box[1]+40
	mouse(d, "mouseMoved", x0, y)
	mouse(d, "mousePressed", x0, y)
	for i := 1; i <= 5; i++ {
		mouse(d, "mouseMoved", x0+(x1-x0)*float64(i)/5, y)
	}
	mouse(d, "mouseReleased", x1, y)
	waitFor(t, d, `document.body.dataset.ready === "1" && document.getElementById("flame-total").dataset.since !== "0"`)
	var sel []int64
	d.Eval(`(function () { var f = document.getElementById("flame-total").dataset, s = document.getElementById("selection").dataset;
		return [+f.since, +f.until, +f.total, +s.since, +s.until]; })()`, &sel)
	since, until := sel[0], sel[1]
	if since != sel[3] || until != sel[4] {
		t.Errorf("the flame graph shows [%d, %d), the selection is [%d, %d)", since, until, sel[3], sel[4])
	}
	dur := p.End - p.Start
	if since < dur*28/100 || since > dur*32/100 || until < dur*63/100 || until > dur*67/100 {
		t.Errorf("dragging over 30%%-65%% of %d ns selected [%d, %d)", dur, since, until)
	}
	screenshot(t, d, shots, "timeline-view") // with the selection
	want := reportTotal(t, p, since, until, 0)
	if int(sel[2]) != want {
		t.Errorf("range [%d, %d): the flame graph's total is %d, nsprof report --since %dns --until %dns says %d", since, until, sel[2], since, until, want)
	}
	if want == total || want == 0 {
		t.Errorf("range [%d, %d) has %d of %d samples: not a test of the filter", since, until, want, total)
	}
	checkMarksTable(t, d, reportMarks(t, p, analyze.Filter{Since: time.Duration(since), Until: time.Duration(until)}))
	checkCountersTable(t, d, reportCounters(t, p, analyze.Filter{Since: time.Duration(since), Until: time.Duration(until)}))
	d.Eval(`document.getElementById("marks-view").scrollIntoView(); true`, new(bool))
	screenshot(t, d, shots, "marks-view")
	screenshot(t, d, shots, "counters-view")
	d.Eval(`window.scrollTo(0, 0); true`, new(bool))
	var topSum int
	d.Eval(`nsprof.state.flame.root.children.reduce((a, c) => a + c.total, 0)`, &topSum)
	if topSum != want {
		t.Errorf("the flame graph's roots sum to %d, want %d", topSum, want)
	}

	// Click process server's lane label: every view but the timeline
	// keeps its samples, in the range, as report --pid 10 does.
	d.Eval(`(function () {
		var r = nsprof.state.layout.rows.find(r => r.kind === "lane" && r.pid === 10 && !r.tid);
		var b = document.getElementById("tl").getBoundingClientRect();
		return [b.x + 40, b.y + r.y - document.getElementById("timeline").scrollTop + r.h / 2];
	})()`, &at)
	mouse(d, "mouseMoved", at[0], at[1])
	mouse(d, "mousePressed", at[0], at[1])
	mouse(d, "mouseReleased", at[0], at[1])
	checkFilter := func(what string, f analyze.Filter) {
		t.Helper()
		var got []int
		d.Eval(`[+document.getElementById("flame-total").dataset.total, nsprof.state.ctree.root.children.reduce((a, c) => a + c.total, 0),
			nsprof.state.flame.root.children.reduce((a, c) => a + c.total, 0)]`, &got)
		f.Since, f.Until = time.Duration(since), time.Duration(until)
		want := reportFiltered(t, p, f, 0)
		if got[0] != want || got[1] != want || got[2] != want || want == 0 || want == reportTotal(t, p, since, until, 0) {
			t.Errorf("%s, range [%d, %d): flame total %d, call tree %d, flame roots %d; report says %d", what, since, until, got[0], got[1], got[2], want)
		}
	}
	waitFor(t, d, `document.body.dataset.ready === "1" && (nsprof.state.flame.filter.pids || []).join() === "10"`)
	checkFilter("lane server [10]", analyze.Filter{PIDs: []int32{10}})
	var fragment, label string
	d.Eval(`location.hash`, &fragment)
	d.Eval(`document.getElementById("filter").textContent`, &label)
	if !strings.Contains(fragment, "&pid=10") || label != "Only server [10]" {
		t.Errorf("filtered to pid 10: URL fragment %q, header %q", fragment, label)
	}
	screenshot(t, d, shots, "timeline-view") // the lane marked

	// Click container db's row in the processes table.
	d.Eval(`(function () {
		var r = document.querySelector('#procs tr.container[data-container="podman:db (0123456789ab)"]');
		r.scrollIntoView({block: "center"});
		var b = r.getBoundingClientRect();
		return [b.x + 20, b.y + b.height / 2];
	})()`, &at)
	mouse(d, "mouseMoved", at[0], at[1])
	mouse(d, "mousePressed", at[0], at[1])
	mouse(d, "mouseReleased", at[0], at[1])
	waitFor(t, d, `document.body.dataset.ready === "1" && nsprof.state.flame.filter.container === "podman:db (0123456789ab)"`)
	checkFilter("container podman:db", analyze.Filter{Container: "podman:db (0123456789ab)"})
	var procRows []string
	d.Eval(`Array.from(document.querySelectorAll("#procs thead th, #procs tr.sel td")).map(e => e.textContent)`, &procRows)
	if got := strings.Join(procRows, "|"); !strings.Contains(got, "|samples|cpu|") || !strings.Contains(got, "podman:db (0123456789ab)|") {
		t.Errorf("processes table: header and selected row %q, want sample type columns and db's row", got)
	}
	screenshot(t, d, shots, "procs-view")
	d.Eval(`document.getElementById("clear-filter").click(); true`, new(bool))
	waitFor(t, d, `document.body.dataset.ready === "1" && !nsprof.state.flame.filter.container && !nsprof.state.flame.filter.pids`)

	// The call tree, top-down then bottom-up: its first level sums to the
	// total, and the hostile names are there as text.
	for _, dir := range []string{"0", "1"} {
		d.Eval(fmt.Sprintf(`(function () { var s = document.getElementById("tree-dir"); s.value = %q; s.dispatchEvent(new Event("change")); return true; })()`, dir), new(bool))
		waitFor(t, d, fmt.Sprintf(`document.body.dataset.ready === "1" && nsprof.state.ctree.invert === %v`, dir == "1"))
		var first int
		d.Eval(`nsprof.state.ctree.root.children.reduce((a, c) => a + c.total, 0)`, &first)
		var rows []string
		d.Eval(`Array.from(document.querySelectorAll("#calltree .ct-row:not(.ct-head)")).map(r => r.textContent)`, &rows)
		if first != want || len(rows) == 0 {
			t.Errorf("call tree (inverted %s): first level sums to %d, want %d; %d rows", dir, first, want, len(rows))
		}
		if dir == "1" {
			screenshot(t, d, shots, "tree-view")
		}
	}

	// Another sample type, same range.
	cpu, err := p.ValueIndex("cpu")
	if err != nil {
		t.Fatal(err)
	}
	d.Eval(fmt.Sprintf(`(function () { var s = document.getElementById("value"); s.value = "%d"; s.dispatchEvent(new Event("change")); return true; })()`, cpu), new(bool))
	waitFor(t, d, fmt.Sprintf(`document.body.dataset.ready === "1" && nsprof.state.flame.sample_type.type === "cpu"`))
	d.Eval(`+document.getElementById("flame-total").dataset.total`, &total)
	if want := reportTotal(t, p, since, until, cpu); total != want || want == 0 {
		t.Errorf("cpu, range [%d, %d): the flame graph's total is %d, report's %d", since, until, total, want)
	}

	// Hostile names are text: the cells hold them as printed, the page
	// holds no element but its own.
	var cells []string
	d.Eval(`Array.from(document.querySelectorAll("#top td.name, #procs td.name, #flame .fn, #calltree .fname, #logs td.name")).map(e => e.textContent)`, &cells)
	all := strings.Join(cells, "\n")
	for _, want := range []string{testcaptures.Hostile[0], `ctl\x01\x1b[31m`, `new\x0aline`} {
		if !strings.Contains(all, want) {
			t.Errorf("no cell shows %q; cells:\n%s", want, all)
		}
	}
	var elems []int
	d.Eval(`[document.scripts.length, document.querySelectorAll("text, img, iframe, object").length]`, &elems)
	if elems[0] != 1 || elems[1] != 0 {
		t.Errorf("the page has %d scripts and %d text/img/iframe/object elements: a name became markup", elems[0], elems[1])
	}
	var logs string
	d.Eval(`document.getElementById("logs").tBodies[0].textContent + " " + document.getElementById("logs-info").textContent`, &logs)
	// The domain is cut to 32 bytes.
	if want := `WARNING</text><script>alert(1)</script` + `new\x0aline (1 in the range)`; !strings.HasSuffix(logs, want) {
		t.Errorf("logs of the range: %q, want ...%q", logs, want)
	}
	screenshot(t, d, shots, "logs-view")
	screenshot(t, d, shots, "flame-view")
	screenshot(t, d, shots, "top-view")

	// The URL keeps the view: reloaded, the page shows the same range
	// and sample type.
	var hash string
	d.Eval(`location.hash`, &hash)
	if want := fmt.Sprintf("#since=%d&until=%d&value=%d", since, until, cpu); hash != want {
		t.Errorf("URL fragment %q, want %q", hash, want)
	}
	// The reload is the browser's (Page.reload), not the page's: a
	// reload from the page, within an evaluation or on a timer of 0 ms,
	// could navigate before the evaluation's answer came back
	// ("Inspected target navigated or closed", seen twice in CI).
	d.Eval(`window.oldPage = true`, new(bool))
	d.Call("Page.reload", map[string]any{})
	waitFor(t, d, `!window.oldPage && document.body && document.body.dataset.ready === "1"`)
	d.Eval(`(function () { var f = document.getElementById("flame-total").dataset; return [+f.since, +f.until, +f.total]; })()`, &sel)
	if want := int64(reportTotal(t, p, since, until, cpu)); sel[0] != since || sel[1] != until || sel[2] != want {
		t.Errorf("reopened %s: [%d, %d) total %d, want [%d, %d) total %d", hash, sel[0], sel[1], sel[2], since, until, want)
	}

	// The pprof views of the range: google/pprof's own page, with its
	// inline scripts allowed, shows the functions.
	var link string
	d.Eval(`document.getElementById("pprof-link").href`, &link)
	if !strings.HasSuffix(link, fmt.Sprintf("/pprof/%d-%d-%d/", since, until, cpu)) {
		t.Errorf("pprof link %q", link)
	}
	d.Navigate(link + "top")
	waitFor(t, d, `!window.oldPage && document.querySelectorAll("#toptable tbody tr").length > 0`)
	var rowsText string
	d.Eval(`document.getElementById("toptable").textContent`, &rowsText)
	if !strings.Contains(rowsText, testcaptures.Hostile[0]) || !strings.Contains(rowsText, "hot") {
		t.Errorf("pprof's top table: %q", rowsText)
	}
	screenshot(t, d, shots, "toptable")
	d.Navigate(s.URL() + "#" + strings.TrimPrefix(hash, "#"))
	waitFor(t, d, `!window.oldPage && document.body && document.body.dataset.ready === "1"`)

	// Escape selects the whole capture again.
	for _, typ := range []string{"keyDown", "keyUp"} {
		d.Call("Input.dispatchKeyEvent", map[string]any{"type": typ, "key": "Escape", "code": "Escape", "windowsVirtualKeyCode": 27})
	}
	waitFor(t, d, `document.body.dataset.ready === "1" && document.getElementById("flame-total").dataset.since === "0"`)
	d.Eval(`+document.getElementById("flame-total").dataset.total`, &total)
	if want := reportTotal(t, p, 0, 0, cpu); total != want {
		t.Errorf("after Escape: total %d, want the whole capture's %d", total, want)
	}
}

// TestBrowserExecPrograms: the processes table lists, under the command
// line of a process that exec'd, the program it ran before.
func TestBrowserExecPrograms(t *testing.T) {
	chromium := testutils.LookPathOrSkip(t, "chromium")
	s, _ := startServer(t, testcaptures.CPUExec(t, []testcaptures.Stack{
		{PID: 20, TID: 20, MS: 1, Frames: []string{"spawn", "main"}, N: 2},
		{PID: 10, TID: 10, MS: 2, Frames: []string{"main"}, N: 1},
		{PID: 20, TID: 20, MS: 6, Frames: []string{"main"}, N: 3},
	}), Options{})
	d := testutils.OpenChromium(t, chromium, s.URL(), `document.body && document.body.dataset.ready === "1"`)
	var cells []string
	d.Eval(`Array.from(document.querySelectorAll('#procs tr[data-pid] td:nth-child(5)')).map(e => e.parentElement.dataset.pid + ": " + e.innerText)`, &cells)
	got := strings.Join(cells, "\n")
	if want := "20: /usr/bin/evil\nbefore exec: launcher --exec evil"; !strings.Contains(got, want) {
		t.Errorf("command lines in the processes table:\n%s\nwant %q", got, want)
	}
	if strings.Contains(got, "10: /usr/bin/server --port 80\nbefore") {
		t.Errorf("a process that did not exec lists programs:\n%s", got)
	}
	screenshot(t, d, t.ArtifactDir(), "procs-view")
}

// TestBrowserLongestMark clicks the longest mark in its list, as a user
// looking for a slow frame does, and checks that its time becomes the
// selection, whose flame graph then shows what nsprof report shows for
// that --since and --until.
func TestBrowserLongestMark(t *testing.T) {
	chromium := testutils.LookPathOrSkip(t, "chromium")
	s, p := startServer(t, testcaptures.Web(t), Options{})
	d := testutils.OpenChromium(t, chromium, s.URL(), `document.body && document.body.dataset.ready === "1"`)
	var at []float64
	d.Eval(`(function () {
		var r = document.querySelector("#longest tbody tr");
		if (!r) return [];
		r.scrollIntoView({block: "center"});
		var b = r.getBoundingClientRect();
		return [b.x + 10, b.y + b.height / 2];
	})()`, &at)
	if len(at) != 2 {
		t.Fatal("no longest mark listed")
	}
	mouse(d, "mouseMoved", at[0], at[1])
	mouse(d, "mousePressed", at[0], at[1])
	mouse(d, "mouseReleased", at[0], at[1])
	waitFor(t, d, `document.body.dataset.ready === "1" && document.getElementById("flame-total").dataset.since !== "0"`)
	var sel []int64
	d.Eval(`(function () { var f = document.getElementById("flame-total").dataset; return [+f.since, +f.until, +f.total]; })()`, &sel)
	// The Web capture's longest mark: 3 ms from 2 ms.
	if sel[0] != 2_000_000 || sel[1] != 5_000_000 {
		t.Fatalf("clicking the longest mark selected [%d, %d), want its time [2000000, 5000000)", sel[0], sel[1])
	}
	if want := reportTotal(t, p, sel[0], sel[1], 0); int(sel[2]) != want || want == 0 {
		t.Errorf("the longest mark's time: the flame graph's total %d, nsprof report's %d", sel[2], want)
	}
	checkMarksTable(t, d, reportMarks(t, p, analyze.Filter{Since: time.Duration(sel[0]), Until: time.Duration(sel[1])}))
}

// TestBrowserCollector checks that the capture's facts tell what a
// SYSPROF_CONTROL_FD collector copied and lost.
func TestBrowserCollector(t *testing.T) {
	chromium := testutils.LookPathOrSkip(t, "chromium")
	s, _ := startServer(t, testcaptures.Collector(t), Options{})
	d := testutils.OpenChromium(t, chromium, s.URL(), `document.body && document.body.dataset.ready === "1"`)
	waitFor(t, d, `document.querySelectorAll("#frames tbody tr").length > 0`)
	var row string
	d.Eval(`Array.from(document.querySelectorAll("#capture tr")).map(r => r.textContent).find(t => t.startsWith("Collector")) || ""`, &row)
	if want := "Collector1200 frames from the SYSPROF_CONTROL_FD rings, full 3 times (2.000 ms blocked, about 40 frames lost)"; row != want {
		t.Errorf("the collector's row: %q, want %q", row, want)
	}
}

// TestBrowserHeapTrack opens a --memprof capture without stack samples:
// the page is ready (it stopped at its empty function table before),
// weighs by the bytes allocated, and its timeline draws the heap the
// allocations kept as a counter track.
func TestBrowserHeapTrack(t *testing.T) {
	chromium := testutils.LookPathOrSkip(t, "chromium")
	s, _ := startServer(t, testcaptures.Memprof(t), Options{})
	d := testutils.OpenChromium(t, chromium, s.URL(), `document.body && document.body.dataset.ready === "1"`)
	var rows []string
	d.Eval(`nsprof.state.layout.rows.map(r => r.kind + " " + r.label.trim())`, &rows)
	if want := "counter " + heapCategory + " / " + heapName; !slices.Contains(rows, want) {
		t.Errorf("timeline rows lack %q:\n%s", want, strings.Join(rows, "\n"))
	}
	// Without stack samples, the views weigh the bytes allocated.
	var value string
	d.Eval(`nsprof.state.meta.sample_types[nsprof.state.value].type`, &value)
	if value != analyze.AllocSpaceType.Type {
		t.Errorf("a capture of allocations alone opens weighed by %s, want %s", value, analyze.AllocSpaceType.Type)
	}
	var top int
	d.Eval(`document.querySelectorAll("#top tbody tr").length`, &top)
	if top == 0 {
		t.Error("the function table is empty")
	}
	screenshot(t, d, t.ArtifactDir(), "timeline-view")
}
