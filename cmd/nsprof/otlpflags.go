//go:build otlp

package main

import (
	"net/http"
	"strings"

	"github.com/spf13/cobra"

	"nsprof/otlp"
)

// otlpFlags are the flags that say where and how push and agent send
// profiles.
type otlpFlags struct {
	endpoint, protocol, tlsCA string
	headers                   []string
	insecure                  bool
}

func (f *otlpFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&f.endpoint, "otlp-endpoint", "", "send to the OTLP receiver at `URL` (http/protobuf: http[s]://HOST:PORT[/PATH]; grpc: HOST:PORT or http[s]://HOST:PORT) (required)")
	fl.StringVar(&f.protocol, "protocol", otlp.ProtocolHTTP, "send over `PROTOCOL`: http/protobuf or grpc")
	fl.StringArrayVar(&f.headers, "header", nil, "add `KEY=VALUE` to every request, as an HTTP header or gRPC metadata (repeatable)")
	fl.StringVar(&f.tlsCA, "tls-ca", "", "check the receiver's TLS certificate against the certificate authorities in PEM `FILE` instead of the system's")
	fl.BoolVar(&f.insecure, "insecure", false, "send gRPC in plain text to a HOST:PORT endpoint (default TLS; http/protobuf follows the URL's scheme)")
}

// client checks the flags and returns the client they describe.
func (f *otlpFlags) client(cmd *cobra.Command) (*otlp.Client, error) {
	if f.endpoint == "" {
		return nil, usagef(cmd, "--otlp-endpoint is required")
	}
	h := http.Header{}
	for _, kv := range f.headers {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || strings.TrimSpace(k) == "" {
			return nil, usagef(cmd, "--header %q: want KEY=VALUE", kv)
		}
		h.Add(strings.TrimSpace(k), v)
	}
	c, err := otlp.NewClient(f.endpoint, otlp.ClientOptions{Protocol: f.protocol, Header: h, TLSCA: f.tlsCA, Insecure: f.insecure})
	if err != nil {
		return nil, usagef(cmd, "%v", err)
	}
	return c, nil
}
