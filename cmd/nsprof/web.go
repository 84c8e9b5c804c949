package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"nsprof/analyze"
	"nsprof/internal/textsafe"
	"nsprof/web"
)

func newWebCmd() *cobra.Command {
	var input, listen string
	cmd := &cobra.Command{
		Use:   "web [FILE]",
		Short: "Browse a capture in a local web page: timeline, flame graph, functions",
		Long: `web loads the capture FILE once and serves a page of it to a browser on this
machine: a timeline with a lane per process and thread (grouped by
container), marks as spans and counters as plots; dragging over it selects
a range that the flame graph, the call tree, the top-functions table and
the logs then show, for the sample type chosen (samples, CPU time, off-CPU
time, allocations...), and that google/pprof's web UI (graph, source,
peek) opens on. The URL keeps the selection.

It prints the page's URL and serves until interrupted; it opens no browser
and the page loads nothing from elsewhere. The server listens on a random
port of 127.0.0.1 and answers only requests that carry the URL's random
token, so other users of this machine cannot read the profile. --listen
changes the address; one that is not loopback lets other machines connect
(anyone with the URL can then read the profile, unencrypted), and web
warns of it.`,
		Example: `  nsprof web capture.syscap
  nsprof web --listen 127.0.0.1:8080 capture.syscap`,
		Args: usageArgs(cobra.MaximumNArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			file, err := captureArg(cmd, args, input, "")
			if err != nil {
				return err
			}
			return serveWeb(cmd, file, listen, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	f := cmd.Flags()
	f.StringVarP(&input, "input", "i", "", "read the capture `FILE` (or give FILE as the argument)")
	f.StringVar(&listen, "listen", "127.0.0.1:0", "listen on `ADDR` (host:port; port 0 picks one)")
	return cmd
}

// serveWeb runs `nsprof web`: it loads file, prints the URL and serves
// until the command's context ends.
func serveWeb(cmd *cobra.Command, file, listen string, stdout, stderr io.Writer) error {
	prog := progressLine(stderr)
	p, err := analyze.LoadFile(file, analyze.LoadOptions{Timeline: true, Progress: prog.Report})
	prog.Clear()
	if err != nil {
		return err
	}
	for _, w := range p.Warnings {
		fmt.Fprintf(stderr, "nsprof: warning: %s: %s\n", textsafe.Escape(file), textsafe.Escape(w))
	}
	s, err := web.New(p, web.Options{Listen: listen, File: file})
	if err != nil {
		return err
	}
	if w := s.Warning(); w != "" {
		fmt.Fprintf(stderr, "nsprof: warning: %s\n", w)
	}
	fmt.Fprintf(stdout, "nsprof web: serving %s at\n  %s\n(interrupt to stop)\n", textsafe.Escape(file), s.URL())
	return s.Serve(cmd.Context())
}
