package main

// The commands that send OTLP profiles (agent, push) are built into
// nsprof-otlp only: nsprof built with the otlp tag, the OTLP client (gRPC,
// protobuf, the collector's pdata) linked in. Left out of nsprof, that
// client's code and tables (a quarter of the binary's) are neither
// initialized nor mapped by the other commands: every report starts
// sooner, every recording holds less (README, "Two binaries"). nsprof
// runs agent and push by executing nsprof-otlp, found next to it (see
// otlpexec.go).

// otlpBinary is the file name of nsprof built with the otlp tag, which
// make build puts next to nsprof.
const otlpBinary = "nsprof-otlp"

const (
	agentUse   = "agent --otlp-endpoint URL [flags]"
	agentShort = "Profile the whole system continuously and push each period to an OpenTelemetry Collector"
	pushUse    = "push [flags] FILE --otlp-endpoint URL"
	pushShort  = "Send the CPU samples and off-CPU time of a capture to an OpenTelemetry Collector (OTLP profiles)"
)
