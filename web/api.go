package web

import (
	"embed"
	"encoding/json"
	"fmt"
	"io/fs"
	"net/http"
	"strconv"
	"time"

	"nsprof/analyze"
	"nsprof/internal/textsafe"
)

//go:embed assets
var assets embed.FS

// Limits of what one answer holds, so that a large capture's page stays
// small; each answer says what it left out.
const (
	// maxBuckets bounds the timeline's columns.
	maxBuckets = 4000
	// maxMarks bounds the marks the timeline sends, first in time.
	maxMarks = 20000
	// flameMinShare is the smallest node the flame graph sends, as a
	// share of the selection's total: 1/2000, under a pixel of a
	// 2000-pixel graph.
	flameMinShare = 1.0 / 2000
	// topLimit is the default number of functions the table sends.
	topLimit = 500
)

// routes returns the handlers of the paths below the token.
func (s *Server) routes() *http.ServeMux {
	mux := http.NewServeMux()
	sub, _ := fs.Sub(assets, "assets")
	static := http.FileServerFS(sub)
	mux.Handle("GET /{$}", static)
	mux.Handle("GET /app.js", static)
	mux.Handle("GET /style.css", static)
	api := func(f func(r *http.Request) (any, error)) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			s.mu.Lock()
			doc, err := f(r)
			s.mu.Unlock()
			w.Header().Set("Content-Type", "application/json; charset=utf-8")
			if err != nil {
				w.WriteHeader(http.StatusBadRequest)
				doc = map[string]string{"error": err.Error()}
			}
			// Encoder escapes <, > and & too: no answer reads as markup.
			json.NewEncoder(textsafe.JSONWriter(w)).Encode(doc)
		})
	}
	mux.Handle("GET /api/meta", api(s.meta))
	mux.Handle("GET /api/timeline", api(s.timeline))
	mux.Handle("GET /api/flame", api(s.flame))
	mux.Handle("GET /api/top", api(s.top))
	mux.Handle("GET /api/logs", api(s.logs))
	mux.HandleFunc("GET /pprof/", s.servePprof)
	return mux
}

// query is the selection a request names: since and until in ns from the
// capture's start (until 0: the end), the sample type's index, invert.
type query struct {
	view  analyze.ViewOptions
	limit int
}

// parseQuery reads the parameters since, until, value, invert and limit.
func (s *Server) parseQuery(r *http.Request) (query, error) {
	var q query
	v := r.URL.Query()
	num := func(name string, def int64) (int64, error) {
		str := v.Get(name)
		if str == "" {
			return def, nil
		}
		n, err := strconv.ParseInt(str, 10, 64)
		if err != nil || n < 0 {
			return 0, fmt.Errorf("parameter %s: %q is not a count of nanoseconds or items", name, str)
		}
		return n, nil
	}
	since, err := num("since", 0)
	if err != nil {
		return q, err
	}
	until, err := num("until", 0)
	if err != nil {
		return q, err
	}
	if until != 0 && until <= since {
		return q, fmt.Errorf("parameter until (%d) must be after since (%d)", until, since)
	}
	vi, err := num("value", 0)
	if err != nil {
		return q, err
	}
	if int(vi) >= max(1, len(s.p.SampleTypes)) {
		return q, fmt.Errorf("parameter value: no sample type %d (the capture has %d)", vi, len(s.p.SampleTypes))
	}
	limit, err := num("limit", topLimit)
	if err != nil {
		return q, err
	}
	q.view = analyze.ViewOptions{
		Filter: analyze.Filter{Since: time.Duration(since), Until: time.Duration(until)},
		Value:  int(vi),
		Invert: v.Get("invert") == "1",
		Inline: true,
	}
	q.limit = int(limit)
	return q, nil
}
