//go:build otlp

package main

import (
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"nsprof/internal/testcaptures"
	"nsprof/internal/testutils"
)

// TestPushToCollector pushes a capture of two processes, one in a podman
// container, to a real OpenTelemetry Collector in three periods and checks
// what its file exporter wrote: the function names and sample counts of
// nsprof report, each process's pid, namespace pid and container
// attributes, and the periods in time order.
func TestPushToCollector(t *testing.T) {
	col := testutils.StartOtelcol(t)
	path := filepath.Join(t.TempDir(), "cpu.syscap")
	if err := os.WriteFile(path, testcaptures.CPU(t), 0o600); err != nil {
		t.Fatal(err)
	}
	// The capture lasts 10 ms, its samples at 1..7 ms: periods 0-3 ms,
	// 3-6 ms and 6-9 ms have samples, 9-10 ms none (not sent).
	_, stderr, status := nsprof(t, nil, "push", path, "--otlp-endpoint", col.HTTP, "--period", "3ms", "--header", "X-Tenant=test")
	if status != 0 {
		t.Fatalf("push: status %d: %s\ncollector:\n%s", status, stderr, col.Log)
	}
	lines := col.Lines(t, 3, 10*time.Second)
	if len(lines) != 3 {
		t.Fatalf("the collector wrote %d requests, want 3 (push said %q)\n%s", len(lines), stderr, col.Log)
	}
	procs, times := testutils.ReadCollected(t, lines)
	if !slices.IsSortedFunc(times, time.Time.Compare) {
		t.Errorf("profile times not in order: %v", times)
	}

	n, _, total := reportByName(t, path)
	var sent int64
	for _, cp := range procs {
		sent += cp.Samples
	}
	if sent != int64(n) {
		t.Errorf("the collector got %d samples, nsprof report counts %d", sent, n)
	}
	got := map[string]int{}
	for _, cp := range procs {
		for name, c := range cp.Total {
			got[name] += c
		}
	}
	if !sameCounts(got, total) {
		t.Errorf("samples by function at the collector:\n%#v\nnsprof report:\n%#v", got, total)
	}

	server, evil := procs[10], procs[20]
	if server == nil || evil == nil {
		t.Fatalf("processes at the collector: %v, want pids 10 and 20", slices.Collect(maps.Keys(procs)))
	}
	for k, want := range map[string]any{
		"process.pid": int64(10), "process.executable.name": "server", "nsprof.process.nspid": int64(1),
		"container.id": "abcdef0123456789", "container.name": "web", "container.runtime.name": "podman",
		"nsprof.container.kind": "podman",
	} {
		if got := server.Attrs[k]; got != want {
			t.Errorf("server: resource attribute %s = %v (%T), want %v", k, got, got, want)
		}
	}
	for k, want := range map[string]any{"process.pid": int64(20), "process.executable.name": "evil", "nsprof.container.kind": "host"} {
		if got := evil.Attrs[k]; got != want {
			t.Errorf("evil: resource attribute %s = %v, want %v", k, got, want)
		}
	}
	for _, k := range []string{"container.id", "container.name", "nsprof.process.nspid"} {
		if v, ok := evil.Attrs[k]; ok {
			t.Errorf("evil, on the host: resource attribute %s = %v, want none", k, v)
		}
	}
	if server.Total["hot"] != 5 || server.Total["main"] != 10 || evil.Total["hot"] != 0 {
		t.Errorf("server's samples of hot, main: %d, %d (want 5, 10); evil's of hot: %d (want 0)", server.Total["hot"], server.Total["main"], evil.Total["hot"])
	}
}

// TestPushProtocols pushes a capture to a real collector over OTLP/HTTP
// and OTLP/gRPC, in plain text and over TLS with a certificate authority
// made by the test: each push arrives whole (every sample, the header as
// metadata not refused). Without the authority, TLS fails on the unknown
// certificate and nothing arrives.
func TestPushProtocols(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cpu.syscap")
	if err := os.WriteFile(path, testcaptures.CPU(t), 0o600); err != nil {
		t.Fatal(err)
	}
	n, _, _ := reportByName(t, path)
	plain := testutils.StartOtelcol(t)
	files := testutils.NewTLSFiles(t)
	secure := testutils.StartOtelcolWithOptions(t, testutils.OtelcolOptions{TLSCert: files.Cert, TLSKey: files.Key})
	for _, tc := range []struct {
		name string
		col  *testutils.Otelcol
		args []string
		fail string // in stderr, when the push must fail
	}{
		{"http", plain, []string{"--otlp-endpoint", plain.HTTP}, ""},
		{"grpc", plain, []string{"--protocol", "grpc", "--otlp-endpoint", plain.GRPC, "--insecure"}, ""},
		{"grpc-url", plain, []string{"--protocol", "grpc", "--otlp-endpoint", "http://" + plain.GRPC}, ""},
		{"https", secure, []string{"--otlp-endpoint", secure.HTTP, "--tls-ca", files.CA}, ""},
		{"grpc-tls", secure, []string{"--protocol", "grpc", "--otlp-endpoint", secure.GRPC, "--tls-ca", files.CA}, ""},
		{"https-unknown-ca", secure, []string{"--otlp-endpoint", secure.HTTP}, "certificate"},
		{"grpc-tls-unknown-ca", secure, []string{"--protocol", "grpc", "--otlp-endpoint", secure.GRPC}, "certificate"},
		{"grpc-plain-to-tls", secure, []string{"--protocol", "grpc", "--otlp-endpoint", secure.GRPC, "--insecure"}, "grpc://"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := len(tc.col.Lines(t, 0, 0))
			args := append([]string{"push", path, "--header", "X-Tenant=test"}, tc.args...)
			_, stderr, status := nsprof(t, nil, args...)
			if tc.fail != "" {
				if status == 0 || !strings.Contains(stderr, tc.fail) {
					t.Errorf("push: status %d, want a failure naming %q: %s", status, tc.fail, stderr)
				}
				time.Sleep(200 * time.Millisecond)
				if got := len(tc.col.Lines(t, 0, 0)); got != before {
					t.Errorf("the collector wrote %d requests of a push that failed", got-before)
				}
				return
			}
			if status != 0 {
				t.Fatalf("push: status %d: %s\ncollector:\n%s", status, stderr, tc.col.Log)
			}
			lines := tc.col.Lines(t, before+1, 10*time.Second)
			if len(lines) != before+1 {
				t.Fatalf("the collector wrote %d requests, want 1\n%s", len(lines)-before, stderr)
			}
			procs, _ := testutils.ReadCollected(t, lines[before:])
			var sent int64
			for _, cp := range procs {
				sent += cp.Samples
			}
			if sent != int64(n) {
				t.Errorf("the collector got %d samples, nsprof report counts %d", sent, n)
			}
		})
	}
}
