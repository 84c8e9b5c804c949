package export

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"testing"

	"nsprof/analyze"
	"nsprof/internal/testutils"
)

// frameBox returns the center on the page of the first frame named name,
// and its rect's width attribute and display.
func frameBox(t *testing.T, d *testutils.DevTools, name string) (x, y, width float64, shown bool) {
	t.Helper()
	var v []any
	d.Eval(fmt.Sprintf(`(function () {
		var g = document.querySelector('g.f[data-name=%q]'), r = g.querySelector("rect"), b = r.getBoundingClientRect();
		return [b.x + b.width / 2, b.y + b.height / 2, +r.getAttribute("width"), g.style.display !== "none"];
	})()`, name), &v)
	return v[0].(float64), v[1].(float64), v[2].(float64), v[3].(bool)
}

// TestSVGZoom opens the flame graph in headless Chromium and clicks a
// frame, as a user does: it becomes the full width of the graph, its
// ancestors too, frames outside it are hidden, and "Reset Zoom" brings
// back the graph as drawn.
func TestSVGZoom(t *testing.T) {
	chromium := testutils.LookPathOrSkip(t, "chromium")
	v := loadTestView(t, analyze.ViewOptions{})
	path := filepath.Join(t.TempDir(), "flame.svg")
	if err := os.WriteFile(path, generate(t, v, FormatSVG, Options{Title: "zoom"}), 0o600); err != nil {
		t.Fatal(err)
	}
	d := testutils.OpenChromium(t, chromium, "file://"+path, `document.readyState === "complete" && document.querySelector("g.f")`)
	full := float64(1200 - 2*svgPad)
	x, y, w0, _ := frameBox(t, d, "hot")
	_, _, idle0, _ := frameBox(t, d, "k_idle")
	if w0 >= full-1 {
		t.Fatalf("hot is %.1f px wide before the click, the full width %.1f", w0, full)
	}
	d.Click(x, y)
	_, _, w, shown := frameBox(t, d, "hot")
	if math.Abs(w-full) > 0.2 || !shown {
		t.Errorf("after a click on hot (%.1f px): %.1f px wide (shown %v), want the full width %.1f", w0, w, shown, full)
	}
	if _, _, w, shown := frameBox(t, d, "work"); math.Abs(w-full) > 0.2 || !shown {
		t.Errorf("its caller work: %.1f px wide (shown %v), want the full width %.1f", w, shown, full)
	}
	if _, _, _, shown := frameBox(t, d, "k_idle"); shown {
		t.Error("k_idle, outside hot, is still shown")
	}
	var label string
	d.Eval(`document.querySelector('g.f[data-name="hot"] text').textContent`, &label)
	if label != "hot" {
		t.Errorf("hot's label %q after the zoom", label)
	}
	var rx, ry float64
	var box []float64
	d.Eval(`(function () { var b = document.getElementById("unzoom").getBoundingClientRect(); return [b.x + b.width / 2, b.y + b.height / 2, b.width]; })()`, &box)
	if box[2] == 0 {
		t.Fatal("no Reset Zoom shown after the zoom")
	}
	rx, ry = box[0], box[1]
	d.Click(rx, ry)
	if _, _, w, shown := frameBox(t, d, "hot"); math.Abs(w-w0) > 0.2 || !shown {
		t.Errorf("after Reset Zoom: hot %.1f px wide (shown %v), want %.1f", w, shown, w0)
	}
	if _, _, w, shown := frameBox(t, d, "k_idle"); math.Abs(w-idle0) > 0.2 || !shown {
		t.Errorf("after Reset Zoom: k_idle %.1f px wide (shown %v), want %.1f", w, shown, idle0)
	}
}
