package record

import (
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"

	"nsprof/capture"
	"nsprof/internal/unix"
)

// metadata returns the METADATA frames describing a recording: what was
// recorded and how, on which host and kernel, by which nsprof. The
// environment is deliberately not stored: Sysprof 3.46 stores the whole
// spawn environment, secrets included, in every capture.
func metadata(opts *Options, mode, event string) [][2]string {
	md := [][2]string{
		{capture.MetaVersion, opts.Version},
		{capture.MetaMode, mode},
		{capture.MetaEvent, event},
		{capture.MetaFrequency, strconv.Itoa(opts.Frequency)},
		{capture.MetaCallGraph, "fp"},
		{capture.MetaRedactCmdlines, opts.RedactCmdlines.String()},
		{"n-cpu", strconv.Itoa(runtime.NumCPU())},
		{"page-size", strconv.Itoa(os.Getpagesize())},
	}
	if opts.Tracepoint != "" {
		md = slices.DeleteFunc(md, func(kv [2]string) bool { return kv[0] == capture.MetaFrequency }) // every hit
	}
	if opts.OffCPU {
		md = append(md, [2]string{capture.MetaOffCPU, "1"})
	}
	if opts.Blocking > 0 {
		md = append(md, [2]string{capture.MetaBlocking, strconv.FormatInt(opts.Blocking.Nanoseconds(), 10)})
	}
	if len(opts.Command) > 0 {
		md = append(md, [2]string{capture.MetaCommand, strings.Join(opts.Command, " ")})
	}
	if len(opts.PIDs) > 0 {
		ps := make([]string, len(opts.PIDs))
		for i, p := range opts.PIDs {
			ps[i] = strconv.Itoa(p)
		}
		md = append(md, [2]string{capture.MetaPIDs, strings.Join(ps, ",")})
	}
	if len(opts.Env) > 0 {
		// Only the names of variables the user set explicitly.
		names := make([]string, len(opts.Env))
		for i, kv := range opts.Env {
			names[i], _, _ = strings.Cut(kv, "=")
		}
		md = append(md, [2]string{capture.MetaEnvNames, strings.Join(names, ",")})
	}
	if u, err := unix.Uname(); err == nil {
		md = append(md,
			[2]string{"uname.sysname", u.Sysname},
			[2]string{"uname.release", u.Release},
			[2]string{"uname.version", u.Version},
			[2]string{"uname.machine", u.Machine},
			[2]string{capture.MetaHostname, u.Nodename})
	}
	return md
}

func writeMetadata(w *capture.Writer, md [][2]string) error {
	t := capture.Now()
	for _, kv := range md {
		if err := w.AddMetadata(t, kv[0], kv[1]); err != nil {
			return err
		}
	}
	return nil
}
