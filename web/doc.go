// Package web serves one loaded capture to a browser on this machine:
// a page with a timeline, a flame graph, call trees, and tables of
// functions, marks, counters, logs and the capture's facts, fed by a JSON
// API the server computes from the [analyze.Profile] it holds, so the
// page never downloads the samples themselves.
//
// The server listens on a loopback address by default and answers only
// requests whose path starts with a random token ([Server.URL] holds it),
// whose Host is an IP address or localhost on its own port, and only GET
// and HEAD. Its assets are embedded: the page makes no request elsewhere.
package web
