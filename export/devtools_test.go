package export

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"nsprof/analyze"
	"nsprof/internal/testutils"
)

// devtools drives a Chromium over its DevTools protocol on a pipe
// (--remote-debugging-pipe: commands on fd 3, replies and events on fd
// 4, each message ended by a NUL byte).
type devtools struct {
	t       *testing.T
	w       *os.File
	r       *bufio.Reader
	id      int
	session string
}

// call sends a command and returns its result, skipping events.
func (d *devtools) call(method string, params any) json.RawMessage {
	d.t.Helper()
	d.id++
	msg := map[string]any{"id": d.id, "method": method, "params": params}
	if d.session != "" {
		msg["sessionId"] = d.session
	}
	b, err := json.Marshal(msg)
	if err != nil {
		d.t.Fatal(err)
	}
	if _, err := d.w.Write(append(b, 0)); err != nil {
		d.t.Fatalf("devtools %s: %v", method, err)
	}
	for {
		line, err := d.r.ReadBytes(0)
		if err != nil {
			d.t.Fatalf("devtools %s: reading the reply: %v", method, err)
		}
		var reply struct {
			ID     int             `json:"id"`
			Result json.RawMessage `json:"result"`
			Error  *struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		if err := json.Unmarshal(line[:len(line)-1], &reply); err != nil {
			d.t.Fatalf("devtools %s: %v: %q", method, err, line)
		}
		if reply.ID != d.id {
			continue // an event
		}
		if reply.Error != nil {
			d.t.Fatalf("devtools %s: %s", method, reply.Error.Message)
		}
		return reply.Result
	}
}

// eval evaluates a JavaScript expression in the page and decodes its
// value into v.
func (d *devtools) eval(expr string, v any) {
	d.t.Helper()
	var res struct {
		Result struct {
			Value json.RawMessage `json:"value"`
		} `json:"result"`
		ExceptionDetails any `json:"exceptionDetails"`
	}
	if err := json.Unmarshal(d.call("Runtime.evaluate", map[string]any{"expression": expr, "returnByValue": true}), &res); err != nil {
		d.t.Fatal(err)
	}
	if res.ExceptionDetails != nil {
		d.t.Fatalf("%s: %v", expr, res.ExceptionDetails)
	}
	if err := json.Unmarshal(res.Result.Value, v); err != nil {
		d.t.Fatalf("%s: %v: %s", expr, err, res.Result.Value)
	}
}

// click clicks the left mouse button at x, y, as a user does.
func (d *devtools) click(x, y float64) {
	d.t.Helper()
	for _, typ := range []string{"mouseMoved", "mousePressed", "mouseReleased"} {
		d.call("Input.dispatchMouseEvent", map[string]any{"type": typ, "x": x, "y": y, "button": "left", "clickCount": 1})
	}
}

// openChromium starts headless Chromium on url and returns a session
// attached to its page, once the JavaScript expression ready is true.
// chromiumProfile returns a new directory for a Chromium profile,
// removed when the test ends. Chromium's helper processes may still
// write into it for a moment after the browser exits, so the removal is
// retried for up to 10 s rather than failing the test as t.TempDir's
// does (one run in four here).
func chromiumProfile(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "nsprof-chromium-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		var err error
		for range 100 {
			if err = os.RemoveAll(dir); err == nil {
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
		t.Errorf("removing the Chromium profile: %v", err)
	})
	return dir
}

func openChromium(t *testing.T, chromium, url, ready string) *devtools {
	t.Helper()
	toChrome, ourW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	ourR, fromChrome, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	cmd := exec.CommandContext(ctx, chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
		"--no-first-run", "--user-data-dir="+chromiumProfile(t), "--window-size=1200,800", "--remote-debugging-pipe", "about:blank")
	cmd.ExtraFiles = []*os.File{toChrome, fromChrome} // fds 3 and 4
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	toChrome.Close()
	fromChrome.Close()
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		// Browser.close ends every Chromium process, so none is left
		// writing into the profile directory t.TempDir removes next;
		// killing the browser process alone leaves its children.
		msg, _ := json.Marshal(map[string]any{"id": 1 << 30, "method": "Browser.close"})
		ourW.Write(append(msg, 0))
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			t.Errorf("chromium did not exit 20 s after Browser.close")
			cancel()
			<-done
		}
		cancel()
		ourW.Close()
		ourR.Close()
	})
	d := &devtools{t: t, w: ourW, r: bufio.NewReader(ourR)}
	var target struct {
		TargetID string `json:"targetId"`
	}
	json.Unmarshal(d.call("Target.createTarget", map[string]any{"url": url}), &target)
	var attached struct {
		SessionID string `json:"sessionId"`
	}
	json.Unmarshal(d.call("Target.attachToTarget", map[string]any{"targetId": target.TargetID, "flatten": true}), &attached)
	d.session = attached.SessionID
	for deadline := time.Now().Add(30 * time.Second); ; {
		var ok bool
		d.eval("!!("+ready+")", &ok)
		if ok {
			return d
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not %s after 30 s", url, ready)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// frameBox returns the center on the page of the first frame named name,
// and its rect's width attribute and display.
func frameBox(d *devtools, name string) (x, y, width float64, shown bool) {
	d.t.Helper()
	var v []any
	d.eval(fmt.Sprintf(`(function () {
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
	d := openChromium(t, chromium, "file://"+path, `document.readyState === "complete" && document.querySelector("g.f")`)
	full := float64(1200 - 2*svgPad)
	x, y, w0, _ := frameBox(d, "hot")
	_, _, idle0, _ := frameBox(d, "k_idle")
	if w0 >= full-1 {
		t.Fatalf("hot is %.1f px wide before the click, the full width %.1f", w0, full)
	}
	d.click(x, y)
	_, _, w, shown := frameBox(d, "hot")
	if math.Abs(w-full) > 0.2 || !shown {
		t.Errorf("after a click on hot (%.1f px): %.1f px wide (shown %v), want the full width %.1f", w0, w, shown, full)
	}
	if _, _, w, shown := frameBox(d, "work"); math.Abs(w-full) > 0.2 || !shown {
		t.Errorf("its caller work: %.1f px wide (shown %v), want the full width %.1f", w, shown, full)
	}
	if _, _, _, shown := frameBox(d, "k_idle"); shown {
		t.Error("k_idle, outside hot, is still shown")
	}
	var label string
	d.eval(`document.querySelector('g.f[data-name="hot"] text').textContent`, &label)
	if label != "hot" {
		t.Errorf("hot's label %q after the zoom", label)
	}
	var rx, ry float64
	var box []float64
	d.eval(`(function () { var b = document.getElementById("unzoom").getBoundingClientRect(); return [b.x + b.width / 2, b.y + b.height / 2, b.width]; })()`, &box)
	if box[2] == 0 {
		t.Fatal("no Reset Zoom shown after the zoom")
	}
	rx, ry = box[0], box[1]
	d.click(rx, ry)
	if _, _, w, shown := frameBox(d, "hot"); math.Abs(w-w0) > 0.2 || !shown {
		t.Errorf("after Reset Zoom: hot %.1f px wide (shown %v), want %.1f", w, shown, w0)
	}
	if _, _, w, shown := frameBox(d, "k_idle"); math.Abs(w-idle0) > 0.2 || !shown {
		t.Errorf("after Reset Zoom: k_idle %.1f px wide (shown %v), want %.1f", w, shown, idle0)
	}
}
