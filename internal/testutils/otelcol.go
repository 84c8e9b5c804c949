package testutils

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// Otelcol is a running OpenTelemetry Collector that receives OTLP
// profiles and writes them, as the file exporter's JSON lines, to Out.
type Otelcol struct {
	// HTTP is the OTLP/HTTP endpoint, "http://127.0.0.1:PORT"; GRPC the
	// OTLP/gRPC address, "127.0.0.1:PORT".
	HTTP, GRPC string
	// Out is the file exporter's output: one JSON line per request.
	Out string
	// Log is the collector's standard output and error (the debug
	// exporter writes there).
	Log *bytes.Buffer

	bin, config string
	cmd         *exec.Cmd
	exited      chan error
}

var otelcolBuild struct {
	sync.Mutex
	path string
}

// OtelcolBinary returns the path of the collector scripts/build-otelcol.sh
// builds (OTLP receiver, debug and file exporters), building it on the
// first call: minutes cold, then found in the cache at once. A failed
// build stops the test through [RequireCI].
func OtelcolBinary(t testing.TB) string {
	t.Helper()
	otelcolBuild.Lock()
	defer otelcolBuild.Unlock()
	if otelcolBuild.path != "" {
		return otelcolBuild.path
	}
	goBin := LookPathOrSkip(t, "go")
	_, file, _, _ := runtime.Caller(0)
	script := filepath.Join(filepath.Dir(file), "..", "..", "scripts", "build-otelcol.sh")
	cmd := exec.Command("bash", script)
	cmd.Env = append(os.Environ(), "GO="+goBin)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		RequireCI(t, "building the OpenTelemetry Collector with %s: %v\n%s", script, err, tail(stderr.String(), 4000))
	}
	otelcolBuild.path = strings.TrimSpace(string(out))
	return otelcolBuild.path
}

// StartOtelcol starts the collector of [OtelcolBinary] with the profiles
// pipeline (feature gate service.profilesSupport) listening on random
// 127.0.0.1 ports, waits until its OTLP/HTTP port accepts connections, and
// stops it when the test ends. A collector that does not start fails the
// test.
func StartOtelcol(t testing.TB) *Otelcol {
	t.Helper()
	return StartOtelcolWithOptions(t, OtelcolOptions{})
}

// OtelcolOptions configure [StartOtelcolWithOptions].
type OtelcolOptions struct {
	// TLSCert and TLSKey, PEM files, make both receivers take TLS only
	// (HTTP is then "https://127.0.0.1:PORT").
	TLSCert, TLSKey string
}

// StartOtelcolWithOptions is [StartOtelcol] with options.
func StartOtelcolWithOptions(t testing.TB, o OtelcolOptions) *Otelcol {
	t.Helper()
	bin := OtelcolBinary(t)
	dir := t.TempDir()
	c := &Otelcol{Out: filepath.Join(dir, "profiles.jsonl"), Log: new(bytes.Buffer)}
	httpAddr, grpcAddr := freeAddr(t), freeAddr(t)
	c.HTTP, c.GRPC = "http://"+httpAddr, grpcAddr
	tls := ""
	if o.TLSCert != "" {
		c.HTTP = "https://" + httpAddr
		tls = fmt.Sprintf("\n        tls:\n          cert_file: %q\n          key_file: %q", o.TLSCert, o.TLSKey)
	}
	config := fmt.Sprintf(`receivers:
  otlp:
    protocols:
      grpc:
        endpoint: %q%s
      http:
        endpoint: %q%s
exporters:
  debug:
    verbosity: detailed
  file:
    path: %q
    format: json
    flush_interval: 100ms
service:
  telemetry:
    metrics:
      level: none
  pipelines:
    profiles:
      receivers: [otlp]
      exporters: [debug, file]
`, grpcAddr, tls, httpAddr, tls, c.Out)
	c.bin, c.config = bin, filepath.Join(dir, "collector.yaml")
	if err := os.WriteFile(c.config, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Stop)
	c.Start(t)
	return c
}

// Start starts the collector again after [Otelcol.Stop], on the same
// ports and output file, and waits until it is ready.
func (c *Otelcol) Start(t testing.TB) {
	t.Helper()
	c.cmd = exec.Command(c.bin, "--config="+c.config, "--feature-gates=service.profilesSupport")
	c.cmd.Stdout, c.cmd.Stderr = c.Log, c.Log
	if err := c.cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", c.bin, err)
	}
	c.exited = make(chan error, 1)
	go func() { c.exited <- c.cmd.Wait() }()
	httpAddr := c.HTTP[strings.Index(c.HTTP, "//")+2:]
	deadline := time.Now().Add(30 * time.Second)
	for {
		select {
		case err := <-c.exited:
			c.exited <- err
			t.Fatalf("the collector exited before it was ready: %v\n%s", err, tail(c.Log.String(), 4000))
		default:
		}
		if conn, err := net.DialTimeout("tcp", httpAddr, time.Second); err == nil {
			conn.Close()
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the collector did not listen on %s within 30s\n%s", httpAddr, tail(c.Log.String(), 4000))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Stop kills the collector and waits for it to exit; a stopped collector
// is left alone.
func (c *Otelcol) Stop() {
	if c.cmd == nil {
		return
	}
	c.cmd.Process.Kill()
	<-c.exited
	c.cmd = nil
}

// Lines waits until the file exporter has written n lines (one per
// request) or timeout passes, and returns the lines it has.
func (c *Otelcol) Lines(t testing.TB, n int, timeout time.Duration) []string {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		data, err := os.ReadFile(c.Out)
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		var lines []string
		for l := range strings.Lines(string(data)) {
			if strings.HasSuffix(l, "\n") {
				lines = append(lines, strings.TrimSuffix(l, "\n"))
			}
		}
		if len(lines) >= n || time.Now().After(deadline) {
			return lines
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// freeAddr returns a 127.0.0.1 address with a port no one listened on a
// moment ago.
func freeAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// tail returns the last n bytes of s.
func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}
