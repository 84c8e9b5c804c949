package web

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"nsprof/analyze"
	"nsprof/internal/testutils"
)

// BenchmarkLargeCapture measures the page on the capture
// NSPROF_WEB_CAPTURE names (bench/web.sh records one): the time to the
// first complete page, to the views of a dragged range, and the server's
// memory, logged once (b.N is not used: each figure is one whole-page
// measurement). It is a measurement, run only with the variable:
// go test -run '^$' -bench LargeCapture -benchtime 1x -v ./web
func BenchmarkLargeCapture(b *testing.B) {
	path := os.Getenv("NSPROF_WEB_CAPTURE")
	if path == "" {
		b.Skip("NSPROF_WEB_CAPTURE names no capture to measure (bench/web.sh)")
	}
	for b.Loop() {
		measureLargeCapture(b, path)
	}
}

func measureLargeCapture(t *testing.B, path string) {
	chromium := testutils.LookPathOrSkip(t, "chromium")
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	p, err := analyze.LoadFile(path, analyze.LoadOptions{Timeline: true})
	if err != nil {
		t.Fatal(err)
	}
	load := time.Since(start)
	start = time.Now()
	s, err := New(p, Options{File: path})
	if err != nil {
		t.Fatal(err)
	}
	index := time.Since(start)
	go s.Serve(t.Context())
	t.Cleanup(func() { s.Close() })
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	t.Logf("%s: %.1f MB, %d samples, %d processes, %d marks; loaded in %v, indexed in %v; heap in use %.0f MiB",
		path, float64(fi.Size())/1e6, len(p.Samples), len(p.Processes), len(p.Timeline.Marks), load.Round(time.Millisecond), index.Round(time.Millisecond), float64(ms.HeapInuse)/(1<<20))

	for _, api := range []string{"api/meta", "api/timeline?buckets=1000", "api/flame", "api/top", "api/flame?since=1000000000&until=2000000000"} {
		t0 := time.Now()
		_, body := get(t, "GET", s.URL()+api, "")
		t.Logf("%s: %d bytes in %v", api, len(body), time.Since(t0).Round(time.Millisecond))
	}
	d := testutils.OpenChromium(t, chromium, s.URL(), `document.body && document.body.dataset.ready === "1"`)
	var cold string
	d.Eval(`JSON.stringify(nsprof.timings)`, &cold)
	t.Logf("first load, the browser starting (ms): %s", cold)
	// Again in the browser now running, as a user reloads or opens a
	// second tab.
	d.Eval(`window.oldPage = true; location.reload(); true`, new(bool))
	waitFor(t, d, `!window.oldPage && document.body && document.body.dataset.ready === "1"`)
	var first float64
	d.Eval(`nsprof.timings.firstReadyMs`, &first)
	var timings string
	d.Eval(`JSON.stringify(nsprof.timings)`, &timings)
	t.Logf("page timings (ms): %s", timings)
	var box []float64
	d.Eval(`(function () { var b = document.getElementById("tl").getBoundingClientRect(); return [b.x, b.y, b.width]; })()`, &box)
	plot := box[2] - 238
	var sel []string
	for i, r := range [][2]float64{{0.2, 0.6}, {0.5, 0.55}, {0.05, 0.95}} {
		x0, x1, y := box[0]+230+r[0]*plot, box[0]+230+r[1]*plot, box[1]+40
		mouse(d, "mouseMoved", x0, y)
		mouse(d, "mousePressed", x0, y)
		mouse(d, "mouseMoved", (x0+x1)/2, y)
		mouse(d, "mouseMoved", x1, y)
		mouse(d, "mouseReleased", x1, y)
		waitFor(t, d, fmt.Sprintf(`document.body.dataset.ready === "1" && document.getElementById("flame-total").dataset.since === document.getElementById("selection").dataset.since && nsprof.state.since > 0 && %d >= 0`, i))
		var ms float64
		d.Eval(`nsprof.timings.lastRefreshMs`, &ms)
		sel = append(sel, fmt.Sprintf("%.0f%%-%.0f%%: %.0f ms", 100*r[0], 100*r[1], ms))
	}
	// Filter the last range to the process with the most samples, as a
	// click on its lane does.
	var top int
	d.Eval(`(function () { var ps = nsprof.state.meta.containers.flatMap(c => c.processes).sort((a, b) => b.samples - a.samples);
		nsprof.setFilter({pid: ps[0].pid}); return ps[0].pid; })()`, &top)
	waitFor(t, d, fmt.Sprintf(`document.body.dataset.ready === "1" && (nsprof.state.flame.filter.pids || []).join() === "%d"`, top))
	var filtered float64
	d.Eval(`nsprof.timings.lastRefreshMs`, &filtered)
	sel = append(sel, fmt.Sprintf("the last, pid %d only: %.0f ms", top, filtered))
	var nodes int
	d.Eval(`document.querySelectorAll("#flame .fn").length`, &nodes)
	status, _ := os.ReadFile("/proc/self/status")
	var rss []string
	for _, l := range strings.Split(string(status), "\n") {
		if strings.HasPrefix(l, "VmRSS") || strings.HasPrefix(l, "VmHWM") {
			rss = append(rss, strings.Join(strings.Fields(l), " "))
		}
	}
	t.Logf("first complete page %.0f ms after the reload's navigation; selections: %s; flame graph of the last: %d boxes; server process %s",
		first, strings.Join(sel, ", "), nodes, strings.Join(rss, ", "))
}
