package testutils

import (
	"net/http"
	"strings"
	"testing"
)

// TestStartOtelcol starts the collector and checks that its OTLP/HTTP
// receiver answers on the profiles path (an empty body is a bad request,
// not a missing route).
func TestStartOtelcol(t *testing.T) {
	c := StartOtelcol(t)
	resp, err := http.Post(c.HTTP+"/v1development/profiles", "application/x-protobuf", strings.NewReader(""))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode == http.StatusNotFound {
		t.Fatalf("POST %s/v1development/profiles: %s: the collector has no profiles route\n%s", c.HTTP, resp.Status, c.Log)
	}
}
