package otlp

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"go.opentelemetry.io/collector/pdata/pprofile"
	"go.opentelemetry.io/collector/pdata/pprofile/pprofileotlp"
)

// ProfilesPath is where an OTLP/HTTP receiver takes profiles.
const ProfilesPath = "/v1development/profiles"

// Client sends profiles to an OTLP/HTTP receiver as protobuf.
type Client struct {
	// URL is the endpoint the requests go to: the receiver's base URL
	// with ProfilesPath added when it has no path of its own.
	URL string
	// Header is added to every request (authentication, tenant).
	Header http.Header
	// HTTP is the client used; NewClient sets a 30 s timeout.
	HTTP *http.Client
}

// ClientOptions configure [NewClient].
type ClientOptions struct {
	// Header is added to every request.
	Header http.Header
	// Insecure skips the verification of an https endpoint's
	// certificate.
	Insecure bool
	// Timeout bounds each request; 0 means 30 s.
	Timeout time.Duration
}

// NewClient returns a client for the OTLP/HTTP endpoint, a URL with
// scheme http or https ("http://collector:4318"; a URL with a path is used
// as it is).
func NewClient(endpoint string, o ClientOptions) (*Client, error) {
	u, err := url.Parse(endpoint)
	if err != nil {
		return nil, fmt.Errorf("OTLP endpoint %q: %w", endpoint, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return nil, fmt.Errorf("OTLP endpoint %q: not an http:// or https:// URL with a host", endpoint)
	}
	if u.Path == "" || u.Path == "/" {
		u.Path = ProfilesPath
	}
	if o.Timeout == 0 {
		o.Timeout = 30 * time.Second
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	if o.Insecure {
		tr.TLSClientConfig = &tls.Config{InsecureSkipVerify: true}
	}
	return &Client{URL: u.String(), Header: o.Header, HTTP: &http.Client{Transport: tr, Timeout: o.Timeout}}, nil
}

// Export sends p in one request. It fails when the request cannot be
// sent, when the receiver answers with another status than 200 (the
// error then holds the status and the start of the body), and when the
// receiver rejects some of the profiles ([*RejectedError]).
func (c *Client) Export(ctx context.Context, p pprofile.Profiles) error {
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
// status the OTLP specification says to retry. Rejected profiles, bad
// captures and other answers are not retried.
func Retryable(err error) bool {
	var se *StatusError
	if errors.As(err, &se) {
		return se.Retryable()
	}
	var sendErr *SendError
	return errors.As(err, &sendErr)
}
