package export

import (
	"context"
	"image"
	"image/png"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"nsprof/analyze"
	"nsprof/internal/testutils"
)

// speedscopeEnv names speedscope's dist/release directory (index.html
// and its scripts); by default where scripts/install-deps.sh installs the
// npm package.
const speedscopeEnv = "NSPROF_SPEEDSCOPE_DIR"

const defaultSpeedscopeDir = "/opt/nsprof-npm/node_modules/speedscope/dist/release"

// screenshot loads url in headless Chromium and returns the decoded
// screenshot.
func screenshot(t *testing.T, chromium, url string) image.Image {
	t.Helper()
	png1 := filepath.Join(t.TempDir(), "shot.png")
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
		"--no-first-run", "--user-data-dir="+testutils.ChromiumProfile(t), "--window-size=1200,800", "--virtual-time-budget=10000",
		"--screenshot="+png1, url)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("chromium: %v\n%s", err, out)
	}
	f, err := os.Open(png1)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// colored returns the share of the image's pixels that are clearly
// colored (not white, grey or black): speedscope's frames are pastel
// colors, its empty page is white and grey.
func colored(img image.Image) float64 {
	b := img.Bounds()
	n := 0
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			hi, lo := max(r, g, bl)>>8, min(r, g, bl)>>8
			if hi-lo > 24 {
				n++
			}
		}
	}
	return float64(n) / float64(b.Dx()*b.Dy())
}

// serveSpeedscope serves speedscope (the npm package) and profile at
// /profile.json on a local server for the rest of the test, and returns
// the Chromium to load it in and the server's URL.
func serveSpeedscope(t *testing.T, profile []byte) (chromium, base string) {
	t.Helper()
	dir := os.Getenv(speedscopeEnv)
	if dir == "" {
		dir = defaultSpeedscopeDir
	}
	if _, err := os.Stat(filepath.Join(dir, "index.html")); err != nil {
		testutils.RequireCI(t, "speedscope not installed (scripts/install-deps.sh installs it with npm): %v", err)
	}
	chromium = testutils.LookPathOrSkip(t, "chromium")
	mux := http.NewServeMux()
	mux.Handle("/", http.FileServer(http.Dir(dir)))
	mux.HandleFunc("/profile.json", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write(profile)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return chromium, srv.URL
}

// TestSpeedscopeRenders serves speedscope (the npm package) and an
// export locally and renders it in headless Chromium: the screenshot
// shows the flame chart's colored frames, which speedscope's page
// without a profile does not.
func TestSpeedscopeRenders(t *testing.T) {
	v := loadTestView(t, analyze.ViewOptions{})
	profile := generate(t, v, FormatSpeedscope, Options{Title: "render"})
	testutils.CheckSpeedscope(t, profile)
	chromium, base := serveSpeedscope(t, profile)

	empty := colored(screenshot(t, chromium, base+"/index.html"))
	shot := screenshot(t, chromium, base+"/index.html#profileURL="+url.QueryEscape(base+"/profile.json"))
	got := colored(shot)
	t.Logf("colored pixels: %.1f%% with the profile, %.1f%% without", 100*got, 100*empty)
	if got < 0.05 || got < 3*empty {
		f, err := os.CreateTemp("", "nsprof-speedscope-*.png") // kept for a look
		if err != nil {
			t.Fatal(err)
		}
		png.Encode(f, shot)
		f.Close()
		t.Errorf("the profile did not render: %.1f%% colored pixels (%.1f%% without a profile); screenshot %s", 100*got, 100*empty, f.Name())
	}
}

// TestSpeedscopeTimeRenders loads a cpu-clock export in speedscope (the
// npm package) in headless Chromium: speedscope's own importer reads
// its weights as time, and its sandwich table shows the 3 samples of
// 250 us as 750.00µs in all (a count would show as "3 (100%)").
func TestSpeedscopeTimeRenders(t *testing.T) {
	profile := generate(t, cpuClockView(t), FormatSpeedscope, Options{Title: "time"})
	chromium, base := serveSpeedscope(t, profile)
	page := base + "/index.html#profileURL=" + url.QueryEscape(base+"/profile.json") + "&view=sandwich"
	d := testutils.OpenChromium(t, chromium, page, `document.body && document.body.innerText.indexOf("Self") >= 0`)
	var text string
	d.Eval(`document.body.innerText`, &text)
	for _, want := range []string{"server [pid 10 tid 13]", "750.00µs (100%)"} {
		if !strings.Contains(text, want) {
			t.Errorf("speedscope's page has no %q:\n%s", want, text)
		}
	}
}
