package web

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"nsprof/analyze"
)

// Options configure [New]. The zero value listens on a random loopback
// port.
type Options struct {
	// Listen is the address to listen on, host:port. Default
	// "127.0.0.1:0": loopback, a port the kernel picks.
	Listen string
	// File names the capture in the page's title. Default "".
	File string
}

// Server serves one profile. Create it with [New], run it with
// [Server.Serve], end it with [Server.Close].
type Server struct {
	p     *analyze.Profile
	file  string
	ln    net.Listener
	token string
	port  string
	srv   *http.Server
	mux   *http.ServeMux
	// mu guards indexes, the sample types' indexes, built at their
	// first use (the default type's by New).
	mu      sync.RWMutex
	indexes []*valueIndex
	// pprofMu guards pprofUIs, the last selections' pprof web UIs,
	// oldest first.
	pprofMu  sync.Mutex
	pprofUIs []*pprofUI
	// cacheMu guards cache, recent API answers by name and query, and
	// cacheKeys, their keys oldest first.
	cacheMu   sync.Mutex
	cache     map[string][]byte
	cacheKeys []string
	// heap is the live bytes of the capture's allocations over time
	// (analyze.View.LiveHeap) and heapChanges how often they changed,
	// made once, at the first timeline.
	heapOnce    sync.Once
	heap        []analyze.CounterPoint
	heapChanges int
}

// New listens on o.Listen and returns a server of p, which must have been
// loaded with [analyze.LoadOptions.Timeline]. It computes what every
// selection of the default sample type shares (the call trees of all the
// stacks) and the whole capture's views first. Nothing is served before
// [Server.Serve]. Requests are answered concurrently.
func New(p *analyze.Profile, o Options) (*Server, error) {
	if p.Timeline == nil {
		return nil, errors.New("web: the profile has no timeline (load it with LoadOptions.Timeline)")
	}
	addr := o.Listen
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	var tok [16]byte
	if _, err := rand.Read(tok[:]); err != nil {
		return nil, fmt.Errorf("web: token: %w", err)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("web: listen on %s: %w", addr, err)
	}
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	s := &Server{p: p, file: o.File, ln: ln, token: hex.EncodeToString(tok[:]), port: port, cache: map[string][]byte{}}
	s.indexes = make([]*valueIndex, max(1, len(p.SampleTypes)))
	if _, err := s.index(0); err != nil {
		ln.Close()
		return nil, fmt.Errorf("web: %w", err)
	}
	s.warm()
	// The server waits for requests from here on: what loading and
	// indexing left as garbage (the loader's growing tables, the decoded
	// frames) goes back to the system now, not when the scavenger gets
	// to it. A 224 MB --memprof capture's server held 583 MB resident
	// for 340 MB of live heap.
	debug.FreeOSMemory()
	s.mux = s.routes()
	s.srv = &http.Server{
		Handler:           s,
		ReadHeaderTimeout: 10 * time.Second,
		MaxHeaderBytes:    16 << 10,
	}
	return s, nil
}

// Addr returns the address the server listens on.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// URL returns the page's address, token included. For a server listening
// on every address (0.0.0.0 or ::) it names the loopback one.
func (s *Server) URL() string {
	host, _, _ := net.SplitHostPort(s.ln.Addr().String())
	if ip := net.ParseIP(host); ip == nil || ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, s.port) + "/" + s.token + "/"
}

// Warning returns what a user must know of the address the server listens
// on: that other machines can reach it when it is not a loopback one, or
// "" when it is.
func (s *Server) Warning() string {
	return ListenWarning(s.ln.Addr())
}

// ListenWarning returns the warning [Server.Warning] gives for addr, ""
// for a loopback address.
func ListenWarning(addr net.Addr) string {
	host, _, err := net.SplitHostPort(addr.String())
	if err != nil {
		host = addr.String()
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return ""
	}
	return fmt.Sprintf("listening on %s, which is not a loopback address: other machines can connect, and anyone who sees the URL's token can read the profile (names, command lines); the connection is not encrypted", addr)
}

// Serve answers requests until ctx is done or [Server.Close] is called; it
// then returns nil.
func (s *Server) Serve(ctx context.Context) error {
	stop := context.AfterFunc(ctx, func() { s.Close() })
	defer stop()
	err := s.srv.Serve(s.ln)
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// Close stops the server and its open connections.
func (s *Server) Close() error {
	err := s.srv.Close()
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// securityHeaders are set on every answer, refusals included: the page
// runs only its own script and style, loads nothing from elsewhere,
// cannot be framed, and sends no Referer.
var securityHeaders = map[string]string{
	"Content-Security-Policy": "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; " +
		"base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
	"X-Content-Type-Options":       "nosniff",
	"X-Frame-Options":              "DENY",
	"Referrer-Policy":              "no-referrer",
	"Cache-Control":                "no-store",
	"Cross-Origin-Opener-Policy":   "same-origin",
	"Cross-Origin-Resource-Policy": "same-origin",
}

// ServeHTTP checks the request's method, Host and token, then serves it.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	for k, v := range securityHeaders {
		w.Header().Set(k, v)
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	if !s.hostOK(r.Host) {
		http.Error(w, "forbidden: unexpected Host", http.StatusForbidden)
		return
	}
	prefix := "/" + s.token + "/"
	rest, ok := strings.CutPrefix(r.URL.Path, "/")
	tok, rest, _ := strings.Cut(rest, "/")
	if !ok || subtle.ConstantTimeCompare([]byte(tok), []byte(s.token)) != 1 {
		http.Error(w, "forbidden: this page needs the URL nsprof web printed, token included", http.StatusForbidden)
		return
	}
	if r.URL.Path == "/"+s.token {
		http.Redirect(w, r, prefix, http.StatusFound)
		return
	}
	r2 := r.Clone(r.Context())
	r2.URL.Path = "/" + rest
	r2.URL.RawPath = ""
	s.mux.ServeHTTP(w, r2)
}

// hostOK says whether a request's Host header names this server: an IP
// address or "localhost", on its port. A DNS name is refused, so a page
// of another site that rebinds its name to this address gets nothing.
func (s *Server) hostOK(hostport string) bool {
	host, port, err := net.SplitHostPort(hostport)
	if err != nil || port != s.port {
		return false
	}
	return strings.EqualFold(host, "localhost") || net.ParseIP(host) != nil
}
