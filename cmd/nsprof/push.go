//go:build otlp

package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"nsprof/internal/textsafe"
	"nsprof/otlp"
)

func newPushCmd() *cobra.Command {
	var (
		of      otlpFlags
		period  time.Duration
		partial bool
		input   string
	)
	cmd := &cobra.Command{
		Use:   pushUse,
		Short: pushShort,
		Long: `Push sends the stack samples of a capture as OpenTelemetry profiles
(OTLP profiles v1development, protobuf over HTTP, or gRPC with --protocol
grpc) to the receiver at --otlp-endpoint, such as an OpenTelemetry Collector
started with --feature-gates=service.profilesSupport. For OTLP/HTTP the
endpoint is a base URL ("http://collector:4318", to which
/v1development/profiles is added) or the full URL of the profiles path; for
gRPC it is HOST:PORT (TLS, or plain text with --insecure) or a URL whose
scheme says (http:// plain text, https:// TLS). --tls-ca checks the
receiver's certificate against the given authorities.

Each request holds a resource per process with its CPU profile (stack
samples) and, for a capture recorded with --off-cpu, its off-CPU profile
(sample type off_cpu, nanoseconds: each stack weighs the time its thread
spent off the CPU after leaving it there; the leaf frame names the task
state). The resource has host.name, process.pid, process.executable.name, process.command_line,
nsprof.process.nspid (the pid in the process's namespace),
nsprof.container.kind, and container.id, container.name and
container.runtime.name for a podman container; samples carry thread.id,
mappings their GNU build id, locations their source lines with inlined
functions.

--period cuts the capture into requests of that length from its start, in
time order (default: the whole capture in one request). Push stops at the
first request the receiver does not take, saying which period it was.`,
		Example: `  nsprof push capture.syscap --otlp-endpoint http://127.0.0.1:4318
  nsprof push capture.syscap --otlp-endpoint https://otel.example:4318 --header Authorization="Bearer $TOKEN" --period 10s`,
		Args: usageArgs(cobra.MaximumNArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			path, err := captureArg(cmd, args, input, "")
			if err != nil {
				return err
			}
			if period < 0 {
				return usagef(cmd, "--period %v: must not be negative", period)
			}
			c, err := of.client(cmd)
			if err != nil {
				return err
			}
			defer c.Close()
			res, err := otlp.Push(cmd.Context(), c, path, otlp.PushOptions{Period: period, Partial: partial})
			stderr := cmd.ErrOrStderr()
			for _, w := range res.Warnings {
				fmt.Fprintf(stderr, "nsprof: warning: %s: %s\n", textsafe.Escape(path), textsafe.Escape(w))
			}
			fmt.Fprintf(stderr, "nsprof: pushed %d samples", res.Samples)
			if res.OffCPU > 0 {
				fmt.Fprintf(stderr, " and %.3fs off the CPU", float64(res.OffCPU)/1e9)
			}
			fmt.Fprintf(stderr, " in %d requests (%d periods) to %s", res.Requests, res.Periods, c.URL)
			if res.Skipped > 0 {
				fmt.Fprintf(stderr, "; left out %d samples that are neither CPU samples nor off-CPU time (blocking calls, allocations)", res.Skipped)
			}
			fmt.Fprintln(stderr)
			if err == nil && res.Requests == 0 && res.Lost > 0 {
				fmt.Fprintf(stderr, "nsprof: warning: the kernel lost %d samples recording %s; nothing was sent, so no request reports them\n", res.Lost, textsafe.Escape(path))
			}
			return err
		},
	}
	f := cmd.Flags()
	f.StringVarP(&input, "input", "i", "", "read the capture `FILE` (or give FILE as the argument)")
	of.register(cmd)
	f.DurationVar(&period, "period", 0, "send one request per `DURATION` of the capture (default: the whole capture)")
	f.BoolVar(&partial, "partial", false, "push the samples before the damage of a damaged capture, with a warning")
	return cmd
}
