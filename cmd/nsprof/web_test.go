package main

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"nsprof/internal/testcaptures"
	"nsprof/internal/testutils"
)

// TestWeb runs nsprof web on loopback and on every address: it prints a
// URL that answers with the token and refuses without, warns of a
// non-loopback address only, and stops when its context ends.
func TestWeb(t *testing.T) {
	path := filepath.Join(t.TempDir(), "web.syscap")
	if err := os.WriteFile(path, testcaptures.Web(t), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		warn bool
	}{
		{[]string{"web", path}, false},
		{[]string{"web", "--listen", "0.0.0.0:0", path}, true},
	} {
		ctx, cancel := context.WithCancel(t.Context())
		r, w := io.Pipe()
		var stderr testutils.SyncBuffer
		done := make(chan error, 1)
		go func() { done <- runIO(ctx, c.args, nil, w, &stderr); w.Close() }()
		var url string
		for sc := bufio.NewScanner(r); url == "" && sc.Scan(); {
			if u, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "http://"); ok {
				url = "http://" + u
			}
		}
		go io.Copy(io.Discard, r)
		if url == "" {
			cancel()
			t.Fatalf("%v: no URL printed; stderr: %s; %v", c.args, stderr.String(), <-done)
		}
		if !strings.HasPrefix(url, "http://127.0.0.1:") {
			t.Errorf("%v: URL %s, want one on 127.0.0.1", c.args, url)
		}
		for _, u := range []struct {
			url  string
			want int
		}{{url + "api/meta", 200}, {url[:strings.LastIndex(strings.TrimSuffix(url, "/"), "/")+1] + "api/meta", 403}} {
			resp, err := http.Get(u.url)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != u.want {
				t.Errorf("%v: GET %s: %d, want %d", c.args, u.url, resp.StatusCode, u.want)
			}
		}
		cancel()
		if err := <-done; err != nil {
			t.Errorf("%v: %v", c.args, err)
		}
		warned := strings.Contains(stderr.String(), "not a loopback address")
		if warned != c.warn {
			t.Errorf("%v: warned %v, want %v; stderr:\n%s", c.args, warned, c.warn, stderr.String())
		}
	}
}
