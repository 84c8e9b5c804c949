package web

import (
	"bytes"
	"embed"
	"encoding/json"
	"fmt"
	"io/fs"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
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
	// maxCacheEntries and maxCached bound the cache of recent answers:
	// their number, and the size of one (about 60 MiB at most).
	maxCacheEntries = 64
	maxCached       = 1 << 20
)

// routes returns the handlers of the paths below the token.
func (s *Server) routes() *http.ServeMux {
	mux := http.NewServeMux()
	sub, _ := fs.Sub(assets, "assets")
	static := http.FileServerFS(sub)
	mux.Handle("GET /{$}", static)
	mux.Handle("GET /app.js", static)
	mux.Handle("GET /style.css", static)
	api := func(name string, f apiFunc) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, status := s.answer(name, f, r)
			w.Header().Set("Content-Type", "application/json; charset=utf-8")
			w.WriteHeader(status)
			w.Write(body)
		})
	}
	mux.Handle("GET /api/meta", api("meta", s.meta))
	mux.Handle("GET /api/timeline", api("timeline", s.timeline))
	mux.Handle("GET /api/flame", api("flame", s.flame))
	mux.Handle("GET /api/top", api("top", s.top))
	mux.Handle("GET /api/logs", api("logs", s.logs))
	mux.Handle("GET /api/marks", api("marks", s.marks))
	mux.Handle("GET /api/counters", api("counters", s.counters))
	mux.Handle("GET /api/summary", api("summary", s.summary))
	mux.HandleFunc("GET /pprof/", s.servePprof)
	return mux
}

// apiFunc computes one answer of the API from its request.
type apiFunc func(r *http.Request) (any, error)

// answer returns the JSON answer of API function name to r and its
// status: from the cache of recent answers, or computed by f and cached.
// A failure is a JSON {"error": ...} with status 400.
func (s *Server) answer(name string, f apiFunc, r *http.Request) ([]byte, int) {
	key := name + "?" + r.URL.Query().Encode()
	s.cacheMu.Lock()
	body, ok := s.cache[key]
	s.cacheMu.Unlock()
	if ok {
		return body, http.StatusOK
	}
	doc, err := f(r)
	status := http.StatusOK
	if err != nil {
		status = http.StatusBadRequest
		doc = map[string]string{"error": err.Error()}
	}
	var buf bytes.Buffer
	// Encoder escapes <, > and & too: no answer reads as markup.
	if err := json.NewEncoder(textsafe.JSONWriter(&buf)).Encode(doc); err != nil {
		return []byte(`{"error":"encoding the answer failed"}`), http.StatusInternalServerError
	}
	if status == http.StatusOK && buf.Len() <= maxCached {
		s.cacheMu.Lock()
		if _, ok := s.cache[key]; !ok {
			if len(s.cacheKeys) == maxCacheEntries {
				delete(s.cache, s.cacheKeys[0])
				s.cacheKeys = s.cacheKeys[1:]
			}
			s.cache[key] = buf.Bytes()
			s.cacheKeys = append(s.cacheKeys, key)
		}
		s.cacheMu.Unlock()
	}
	return buf.Bytes(), status
}

// warm computes the answers a first page asks for, of the whole capture
// and the default sample type, into the cache.
func (s *Server) warm() {
	for _, q := range []struct {
		name string
		f    apiFunc
		url  string
	}{
		{"meta", s.meta, "/api/meta"}, {"flame", s.flame, "/api/flame?invert=0&value=0"}, {"top", s.top, "/api/top?value=0"},
		{"logs", s.logs, "/api/logs?limit=1000&value=0"},
	} {
		r, err := http.NewRequest(http.MethodGet, q.url, nil)
		if err == nil {
			s.answer(q.name, q.f, r)
		}
	}
}

// query is the selection a request names: since and until in ns from the
// capture's start (until 0: the end), the sample type's index, invert.
type query struct {
	view  analyze.ViewOptions
	limit int
}

// maxFilterText and maxFilterIDs bound the filter parameters: the
// length of container and comm, the number of pids and tids.
const (
	maxFilterText = 256
	maxFilterIDs  = 64
)

// ids parses parameter name's list of process or thread ids, s: decimal
// numbers separated by commas, nil for "".
func ids(s, name string) ([]int32, error) {
	if s == "" {
		return nil, nil
	}
	f := strings.Split(s, ",")
	if len(f) > maxFilterIDs {
		return nil, fmt.Errorf("parameter %s: more than %d ids", name, maxFilterIDs)
	}
	out := make([]int32, len(f))
	for i, str := range f {
		n, err := strconv.ParseInt(str, 10, 32)
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("parameter %s: %q is not a %s", name, str, name)
		}
		out[i] = int32(n)
	}
	return out, nil
}

// parseFilter reads the filter's parameters pid and tid (lists,
// comma-separated), container and comm, as nsprof report's --pid, --tid,
// --container and --comm read them.
func parseFilter(v url.Values) (analyze.Filter, error) {
	var f analyze.Filter
	var err error
	if f.PIDs, err = ids(v.Get("pid"), "pid"); err != nil {
		return f, err
	}
	if f.TIDs, err = ids(v.Get("tid"), "tid"); err != nil {
		return f, err
	}
	for _, name := range []string{"container", "comm"} {
		if len(v.Get(name)) > maxFilterText {
			return f, fmt.Errorf("parameter %s: longer than %d bytes", name, maxFilterText)
		}
	}
	f.Container, f.Comm = v.Get("container"), v.Get("comm")
	if f.Comm != "" {
		if _, err := regexp.Compile(f.Comm); err != nil {
			return f, fmt.Errorf("parameter comm: %w", err)
		}
	}
	return f, nil
}

// parseQuery reads the parameters since, until, value, invert and limit,
// and the filter's ([parseFilter]).
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
	f, err := parseFilter(v)
	if err != nil {
		return q, err
	}
	f.Since, f.Until = time.Duration(since), time.Duration(until)
	q.view = analyze.ViewOptions{
		Filter: f,
		Value:  int(vi),
		Invert: v.Get("invert") == "1",
		Inline: true,
	}
	q.limit = int(limit)
	return q, nil
}
