package otlp

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"go.opentelemetry.io/collector/pdata/pprofile"
	"go.opentelemetry.io/collector/pdata/pprofile/pprofileotlp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
)

// ProfilesPath is where an OTLP/HTTP receiver takes profiles.
const ProfilesPath = "/v1development/profiles"

// The protocols of [ClientOptions.Protocol], as OTEL_EXPORTER_OTLP_PROTOCOL
// names them.
const (
	ProtocolHTTP = "http/protobuf"
	ProtocolGRPC = "grpc"
)

// Client sends profiles to an OTLP receiver: protobuf over HTTP, or
// gRPC. Close releases a gRPC client's connection.
type Client struct {
	// URL is where the requests go: for OTLP/HTTP the receiver's base
	// URL with ProfilesPath added when it has no path of its own; for
	// gRPC, "grpc://HOST:PORT" or "grpcs://HOST:PORT" (TLS).
	URL string
	// Header is added to every request (authentication, tenant): as
	// HTTP headers, or as gRPC metadata.
	Header http.Header
	// HTTP is the client used for OTLP/HTTP; NewClient sets a 30 s
	// timeout.
	HTTP *http.Client

	grpc    pprofileotlp.GRPCClient // with ProtocolGRPC
	conn    *grpc.ClientConn
	md      metadata.MD
	timeout time.Duration
}

// ClientOptions configure [NewClient].
type ClientOptions struct {
	// Protocol is ProtocolHTTP (the default) or ProtocolGRPC.
	Protocol string
	// Header is added to every request.
	Header http.Header
	// TLSCA is a PEM file of the certificate authorities a TLS
	// receiver's certificate is checked against, instead of the
	// system's.
	TLSCA string
	// Insecure sends gRPC in plain text to an endpoint without a
	// scheme (default TLS). OTLP/HTTP follows its URL's scheme: http://
	// is plain text, https:// TLS, which Insecure contradicts.
	Insecure bool
	// Timeout bounds each request; 0 means 30 s.
	Timeout time.Duration
}

// NewClient returns a client for endpoint. For OTLP/HTTP it is a URL with
// scheme http or https ("http://collector:4318"; a URL with a path is used
// as it is). For gRPC it is HOST:PORT, TLS unless o.Insecure, or a URL
// whose scheme says: http:// plain text, https:// TLS.
func NewClient(endpoint string, o ClientOptions) (*Client, error) {
	if o.Timeout == 0 {
		o.Timeout = 30 * time.Second
	}
	var tlsConf *tls.Config
	if o.TLSCA != "" {
		pem, err := os.ReadFile(o.TLSCA)
		if err != nil {
			return nil, fmt.Errorf("TLS CA: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("TLS CA %s: no PEM certificate in it", o.TLSCA)
		}
		tlsConf = &tls.Config{RootCAs: pool}
	}
	switch o.Protocol {
	case "", ProtocolHTTP:
		return newHTTPClient(endpoint, o, tlsConf)
	case ProtocolGRPC:
		return newGRPCClient(endpoint, o, tlsConf)
	}
	return nil, fmt.Errorf("OTLP protocol %q: want %s or %s", o.Protocol, ProtocolHTTP, ProtocolGRPC)
}

func newHTTPClient(endpoint string, o ClientOptions, tlsConf *tls.Config) (*Client, error) {
	u, err := url.Parse(endpoint)
	if err != nil {
		return nil, fmt.Errorf("OTLP endpoint %q: %w", endpoint, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return nil, fmt.Errorf("OTLP endpoint %q: not an http:// or https:// URL with a host", endpoint)
	}
	if o.Insecure && u.Scheme == "https" {
		return nil, fmt.Errorf("OTLP endpoint %q: insecure (plain text) contradicts https://; give http://", endpoint)
	}
	if u.Path == "" || u.Path == "/" {
		u.Path = ProfilesPath
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	if tlsConf != nil {
		tr.TLSClientConfig = tlsConf
	}
	return &Client{URL: u.String(), Header: o.Header, HTTP: &http.Client{Transport: tr, Timeout: o.Timeout}}, nil
}

func newGRPCClient(endpoint string, o ClientOptions, tlsConf *tls.Config) (*Client, error) {
	target, plain := endpoint, o.Insecure
	if u, err := url.Parse(endpoint); err == nil && (u.Scheme == "http" || u.Scheme == "https") {
		if u.Host == "" || u.Path != "" && u.Path != "/" {
			return nil, fmt.Errorf("OTLP gRPC endpoint %q: want HOST:PORT or a URL with a host and no path", endpoint)
		}
		if o.Insecure && u.Scheme == "https" {
			return nil, fmt.Errorf("OTLP endpoint %q: insecure (plain text) contradicts https://", endpoint)
		}
		target, plain = u.Host, u.Scheme == "http"
	}
	if _, _, err := net.SplitHostPort(target); err != nil {
		return nil, fmt.Errorf("OTLP gRPC endpoint %q: want HOST:PORT: %v", endpoint, err)
	}
	creds := insecure.NewCredentials()
	scheme := "grpc://"
	if !plain {
		if tlsConf == nil {
			tlsConf = &tls.Config{}
		}
		creds = credentials.NewTLS(tlsConf)
		scheme = "grpcs://"
	}
	conn, err := grpc.NewClient(target, grpc.WithTransportCredentials(creds))
	if err != nil {
		return nil, fmt.Errorf("OTLP gRPC endpoint %q: %w", endpoint, err)
	}
	md := metadata.MD{}
	for k, vs := range o.Header {
		md.Append(strings.ToLower(k), vs...)
	}
	return &Client{URL: scheme + target, Header: o.Header, grpc: pprofileotlp.NewGRPCClient(conn), conn: conn, md: md, timeout: o.Timeout}, nil
}

// Close releases the client's gRPC connection; it does nothing for
// OTLP/HTTP.
func (c *Client) Close() error {
	if c.conn == nil {
		return nil
	}
	return c.conn.Close()
}

// Export sends p in one request. It fails when the request cannot be
// sent, when the receiver answers with another status than 200 (the
// error then holds the status and the start of the body), and when the
// receiver rejects some of the profiles ([*RejectedError]).
func (c *Client) Export(ctx context.Context, p pprofile.Profiles) error {
	if c.grpc != nil {
		return c.exportGRPC(ctx, p)
	}
	body, err := pprofileotlp.NewExportRequestFromProfiles(p).MarshalProto()
	if err != nil {
		return fmt.Errorf("encoding OTLP profiles request: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.URL, bytes.NewReader(body))
	if err != nil {
		return err
	}
	for k, vs := range c.Header {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	req.Header.Set("Content-Type", "application/x-protobuf")
	req.Header.Set(pprofileotlp.DevelopmentVersionHeader, pprofileotlp.DevelopmentVersion)
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return &SendError{URL: c.URL, Err: err}
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return fmt.Errorf("reading the answer of %s: %w", c.URL, err)
	}
	if resp.StatusCode != http.StatusOK {
		msg := strings.TrimSpace(string(data))
		if len(msg) > 200 {
			msg = msg[:200] + "…"
		}
		return &StatusError{URL: c.URL, Status: resp.Status, Code: resp.StatusCode, Body: msg}
	}
	ans := pprofileotlp.NewExportResponse()
	if len(data) > 0 && strings.Contains(resp.Header.Get("Content-Type"), "protobuf") {
		if err := ans.UnmarshalProto(data); err != nil {
			return fmt.Errorf("decoding the answer of %s: %w", c.URL, err)
		}
	}
	if n := ans.PartialSuccess().RejectedProfiles(); n > 0 {
		return &RejectedError{URL: c.URL, Rejected: n, Message: ans.PartialSuccess().ErrorMessage()}
	}
	return nil
}

// StatusError is a receiver's answer with another status than 200.
type StatusError struct {
	URL, Status, Body string
	Code              int
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("%s answered %s: %s", e.URL, e.Status, e.Body)
}

// Retryable reports whether the request may succeed later, as the OTLP
// specification lists the statuses: 429, 502, 503 and 504.
func (e *StatusError) Retryable() bool {
	switch e.Code {
	case http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true
	}
	return false
}

// RejectedError says the receiver took the request but rejected Rejected
// of its profiles.
type RejectedError struct {
	URL      string
	Rejected int64
	Message  string
}

func (e *RejectedError) Error() string {
	return fmt.Sprintf("%s rejected %d profiles: %s", e.URL, e.Rejected, e.Message)
}

// SendError is a request that got no answer: the receiver is away or
// unreachable.
type SendError struct {
	URL string
	Err error
}

func (e *SendError) Error() string { return fmt.Sprintf("sending profiles to %s: %v", e.URL, e.Err) }

func (e *SendError) Unwrap() error { return e.Err }

// Retryable reports whether err, from [Client.Export] or [Push], may pass
// when tried again: a request that got no answer ([*SendError]), or a
// status the OTLP specification says to retry (HTTP or gRPC). Rejected
// profiles, bad captures and other answers are not retried.
func Retryable(err error) bool {
	var se *StatusError
	if errors.As(err, &se) {
		return se.Retryable()
	}
	var ge *GRPCError
	if errors.As(err, &ge) {
		return ge.Retryable()
	}
	var sendErr *SendError
	return errors.As(err, &sendErr)
}
