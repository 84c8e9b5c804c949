package web

import (
	"encoding/base64"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/google/pprof/driver"
	"github.com/google/pprof/profile"

	"nsprof/analyze"
	"nsprof/export"
)

// maxPprofUIs is how many selections keep their pprof web UI (and its
// copy of the profile) at once; older ones are built again when asked.
const maxPprofUIs = 4

// pprofUI is google/pprof's web UI of one selection: its handlers by
// path ("/top", "/source", ...).
type pprofUI struct {
	key      string
	handlers map[string]http.Handler
}

// servePprof serves /pprof/SINCE-UNTIL-VALUE[-FILTER]/PATH: pprof's own web UI
// (graph, flame graph, top, peek, source, disassembly) of the selection
// exported as a pprof profile, as `nsprof export --format pprof --since
// --until --value` writes it. FILTER is the query of the filter's
// parameters ([parseFilter]: pid=1,2&container=web), base64url without
// padding.
func (s *Server) servePprof(w http.ResponseWriter, r *http.Request) {
	rest := strings.TrimPrefix(r.URL.Path, "/pprof/")
	key, path, ok := strings.Cut(rest, "/")
	if !ok {
		http.Redirect(w, r, key+"/", http.StatusFound)
		return
	}
	ui, err := s.pprofUI(key)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	h := ui.handlers["/"+path]
	if h == nil {
		http.NotFound(w, r)
		return
	}
	// pprof's pages have inline scripts and styles; they still load
	// nothing from elsewhere.
	w.Header().Set("Content-Security-Policy", "default-src 'none'; script-src 'self' 'unsafe-inline'; style-src 'self' 'unsafe-inline'; "+
		"img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'")
	r2 := r.Clone(r.Context())
	r2.URL.Path = "/" + path
	h.ServeHTTP(w, r2)
}

// pprofUI returns the UI of the selection key ("SINCE-UNTIL-VALUE", in
// ns from the capture's start and a sample type's index, then "-FILTER"
// when there is one, as servePprof says), built at its first use.
func (s *Server) pprofUI(key string) (*pprofUI, error) {
	s.pprofMu.Lock()
	defer s.pprofMu.Unlock()
	for _, ui := range s.pprofUIs {
		if ui.key == key {
			return ui, nil
		}
	}
	f := strings.Split(key, "-")
	var n [3]int64
	for i := range n {
		var err error
		if len(f) != 3 && len(f) != 4 {
			err = fmt.Errorf("want SINCE-UNTIL-VALUE")
		} else {
			n[i], err = strconv.ParseInt(f[i], 10, 64)
		}
		if err != nil || n[i] < 0 {
			return nil, fmt.Errorf("pprof selection %q: want SINCE-UNTIL-VALUE[-FILTER], nanoseconds, a sample type's index and a filter", key)
		}
	}
	if n[1] != 0 && n[1] <= n[0] || n[2] >= int64(max(1, len(s.p.SampleTypes))) {
		return nil, fmt.Errorf("pprof selection %q: no such range or sample type", key)
	}
	var filter analyze.Filter
	if len(f) == 4 {
		q, err := base64.RawURLEncoding.DecodeString(f[3])
		if err != nil {
			return nil, fmt.Errorf("pprof selection %q: the filter is not base64url: %v", key, err)
		}
		v, err := url.ParseQuery(string(q))
		if err == nil {
			filter, err = parseFilter(v)
		}
		if err != nil {
			return nil, fmt.Errorf("pprof selection %q: filter: %w", key, err)
		}
	}
	filter.Since, filter.Until = time.Duration(n[0]), time.Duration(n[1])
	v, err := s.p.View(analyze.ViewOptions{Filter: filter, Value: int(n[2])})
	if err != nil {
		return nil, err
	}
	prof, err := export.Pprof(v, export.Options{})
	if err != nil {
		return nil, err
	}
	ui := &pprofUI{key: key}
	err = driver.PProf(&driver.Options{
		Flagset: &pprofFlags{FlagSet: flag.NewFlagSet("pprof", flag.ContinueOnError),
			args: []string{"-http=127.0.0.1:1", "-no_browser", "-symbolize=none", "selection"}},
		Fetch: pprofFetcher{prof},
		UI:    quietUI{},
		HTTPServer: func(args *driver.HTTPServerArgs) error {
			ui.handlers = args.Handlers
			return nil
		},
	})
	if err != nil {
		return nil, fmt.Errorf("pprof: %w", err)
	}
	if len(s.pprofUIs) == maxPprofUIs {
		s.pprofUIs = s.pprofUIs[1:]
	}
	s.pprofUIs = append(s.pprofUIs, ui)
	return ui, nil
}

// pprofFetcher gives pprof the selection's profile.
type pprofFetcher struct{ p *profile.Profile }

func (f pprofFetcher) Fetch(string, time.Duration, time.Duration) (*profile.Profile, string, error) {
	return f.p, "", nil
}

// pprofFlags are pprof's command line: args, parsed by package flag.
type pprofFlags struct {
	*flag.FlagSet
	args []string
}

func (f *pprofFlags) StringList(name, def, usage string) *[]*string {
	return &[]*string{f.String(name, def, usage)}
}
func (f *pprofFlags) ExtraUsage() string   { return "" }
func (f *pprofFlags) AddExtraUsage(string) {}
func (f *pprofFlags) Parse(usage func()) []string {
	f.FlagSet.Usage = usage
	f.FlagSet.SetOutput(io.Discard)
	if err := f.FlagSet.Parse(f.args); err != nil {
		return nil
	}
	return f.FlagSet.Args()
}

// quietUI is pprof's user interface: it reads nothing, prints nothing,
// opens no browser.
type quietUI struct{}

func (quietUI) ReadLine(string) (string, error)     { return "", io.EOF }
func (quietUI) Print(...any)                        {}
func (quietUI) PrintErr(...any)                     {}
func (quietUI) IsTerminal() bool                    { return false }
func (quietUI) WantBrowser() bool                   { return false }
func (quietUI) SetAutoComplete(func(string) string) {}
