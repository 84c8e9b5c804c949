package testutils

// This file drives headless Chromium for the tests of the pages nsprof
// writes or serves (export's SVG and speedscope pages, nsprof web).

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// DevTools drives a Chromium over its DevTools protocol on a pipe
// (--remote-debugging-pipe: commands on fd 3, replies and events on fd
// 4, each message ended by a NUL byte).
type DevTools struct {
	t       testing.TB
	w       *os.File
	r       *bufio.Reader
	id      int
	session string
}

// Call sends a command and returns its result, skipping events.
func (d *DevTools) Call(method string, params any) json.RawMessage {
	d.t.Helper()
	res, err := d.call(method, params)
	if err != nil {
		d.t.Fatalf("devtools %s: %v", method, err)
	}
	return res
}

// call is [DevTools.Call] returning the error Chromium answers with.
func (d *DevTools) call(method string, params any) (json.RawMessage, error) {
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
			return nil, errors.New(reply.Error.Message)
		}
		return reply.Result, nil
	}
}

// Eval evaluates a JavaScript expression in the page and decodes its
// value into v.
func (d *DevTools) Eval(expr string, v any) {
	d.t.Helper()
	if err := d.TryEval(expr, v); err != nil {
		d.t.Fatal(err)
	}
}

// Navigate marks the page it leaves (window.oldPage = true, for a wait
// on !window.oldPage) and has the browser load url. Through Page.navigate,
// not by setting location.href in an evaluation, whose answer the page
// it tears down may never give ("Inspected target navigated or closed").
func (d *DevTools) Navigate(url string) {
	d.t.Helper()
	d.Eval(`window.oldPage = true; true`, new(bool))
	d.Call("Page.navigate", map[string]any{"url": url})
}

// TryEval is [DevTools.Eval] returning what went wrong, such as the
// page having no context to evaluate in while it navigates.
func (d *DevTools) TryEval(expr string, v any) error {
	d.t.Helper()
	var res struct {
		Result struct {
			Value json.RawMessage `json:"value"`
		} `json:"result"`
		ExceptionDetails any `json:"exceptionDetails"`
	}
	raw, err := d.call("Runtime.evaluate", map[string]any{"expression": expr, "returnByValue": true})
	if err != nil {
		return fmt.Errorf("devtools Runtime.evaluate: %w", err)
	}
	if err := json.Unmarshal(raw, &res); err != nil {
		return err
	}
	if res.ExceptionDetails != nil {
		return fmt.Errorf("%s: %v", expr, res.ExceptionDetails)
	}
	if err := json.Unmarshal(res.Result.Value, v); err != nil {
		return fmt.Errorf("%s: %v: %s", expr, err, res.Result.Value)
	}
	return nil
}

// Click clicks the left mouse button at x, y, as a user does.
func (d *DevTools) Click(x, y float64) {
	d.t.Helper()
	for _, typ := range []string{"mouseMoved", "mousePressed", "mouseReleased"} {
		d.Call("Input.dispatchMouseEvent", map[string]any{"type": typ, "x": x, "y": y, "button": "left", "clickCount": 1})
	}
}

// ChromiumProfile returns a new directory for a Chromium profile,
// removed when the test ends. Chromium's helper processes may still
// write into it for a moment after the browser exits, so the removal is
// retried for up to 10 s rather than failing the test as t.TempDir's
// does (one run in four here).
func ChromiumProfile(t testing.TB) string {
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

// OpenChromium starts headless Chromium (a 1200x800 window) on url and
// returns a session attached to its page, once the JavaScript expression
// ready is true. The browser is closed when the test ends.
func OpenChromium(t testing.TB, chromium, url, ready string) *DevTools {
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
		"--no-first-run", "--user-data-dir="+ChromiumProfile(t), "--window-size=1200,800", "--remote-debugging-pipe", "about:blank")
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
	d := &DevTools{t: t, w: ourW, r: bufio.NewReader(ourR)}
	var target struct {
		TargetID string `json:"targetId"`
	}
	json.Unmarshal(d.Call("Target.createTarget", map[string]any{"url": url}), &target)
	var attached struct {
		SessionID string `json:"sessionId"`
	}
	json.Unmarshal(d.Call("Target.attachToTarget", map[string]any{"targetId": target.TargetID, "flatten": true}), &attached)
	d.session = attached.SessionID
	for deadline := time.Now().Add(30 * time.Second); ; {
		// While the page commits its navigation (in another renderer
		// process when its headers ask for one, as
		// Cross-Origin-Opener-Policy does) it has no context to
		// evaluate in for a moment.
		var ok bool
		err := d.TryEval("!!("+ready+")", &ok)
		if err != nil && !strings.Contains(err.Error(), "context") {
			t.Fatal(err)
		}
		if err == nil && ok {
			return d
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not %s after 30 s", url, ready)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
