package main

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"nsprof/capture"
	"nsprof/internal/unix"
	"nsprof/perf"
	"nsprof/record"
)

// recordFlags are the command-line settings of `nsprof record` that are
// not record.Options fields.
type recordFlags struct {
	output    string
	force     bool
	duration  float64
	all       bool
	callGraph string
	fp        bool
	redact    string
}

// parseCallGraph parses --call-graph fp[,SIZE]|dwarf[,SIZE] into the bytes
// of stack to copy per sample for DWARF unwinding (0 for frame pointers)
// and, with frame pointers, for finding the callers the kernel's walk
// skips (0: none). SIZE is rounded up to a multiple of 8, as perf does.
func parseCallGraph(v string) (dwarf, leaf int, err error) {
	mode, size, hasSize := strings.Cut(v, ",")
	var n int
	switch mode {
	case "fp":
		n = defaultLeafStack
	case "dwarf":
		n = defaultDWARFStack
	default:
		return 0, 0, fmt.Errorf("--call-graph %q: want fp[,SIZE] or dwarf[,SIZE]", v)
	}
	if hasSize {
		n, err = strconv.Atoi(size)
		if err != nil || n < 0 || n == 0 && mode == "dwarf" {
			return 0, 0, fmt.Errorf("--call-graph %s,%s: want a size in bytes", mode, size)
		}
		n = (n + 7) &^ 7
		if n > perf.MaxUserStack {
			return 0, 0, fmt.Errorf("--call-graph %s,%s: at most %d bytes (the kernel's limit)", mode, size, perf.MaxUserStack)
		}
	}
	if mode == "dwarf" {
		return n, 0, nil
	}
	if runtime.GOARCH != "amd64" {
		n = 0 // the unwinder reads x86-64 frames only
	}
	return 0, n, nil
}

// defaultLeafStack is the stack copy for finding skipped callers with
// --call-graph fp: 512 bytes found the caller in 94% of the samples of
// python and perl loops (128 bytes: 83%).
const defaultLeafStack = 512

// defaultDWARFStack is perf's default stack copy for --call-graph dwarf.
const defaultDWARFStack = 8192

func newRecordCmd() *cobra.Command {
	var fl recordFlags
	var opts record.Options
	cmd := &cobra.Command{
		Use:   "record [flags] [-o FILE] [-- COMMAND [ARGS...]]",
		Short: "Record a command, processes or the whole system into a capture",
		Long: `Record samples CPU stacks with perf_event_open (cpu-clock, kernel and user
callchains) and records process lifecycles, mappings, namespaces and counters
into a Sysprof capture.

Targets: a command after "--" (recorded from its exec, with its threads and
children; its exit status becomes nsprof's), existing processes with -p, or
the whole system with -a (the default without a command or -p).

Recording stops when the command exits, after --duration, or on Ctrl-C or
SIGTERM; the capture is complete in every case.`,
		Example: `  nsprof record -- ./myprogram --its-flags
  nsprof record -p 1234 --duration 10 -o server.syscap
  nsprof record -a --duration 5
  nsprof record --call-graph dwarf -- ./built-without-frame-pointers
  nsprof record --use-trace-fd -e G_MESSAGES_DEBUG=all -- gjs app.js
  nsprof record --memprof --no-perf -- ./myprogram`,
		Args: func(cmd *cobra.Command, args []string) error { return nil },
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Command = args
			if len(args) > 0 && len(opts.PIDs) > 0 {
				return usagef(cmd, "give either a command or -p, not both")
			}
			if fl.all && (len(args) > 0 || len(opts.PIDs) > 0) {
				return usagef(cmd, "-a records the whole system; it does not combine with a command or -p")
			}
			if fl.duration < 0 {
				return usagef(cmd, "--duration must not be negative")
			}
			if opts.Frequency < 0 {
				return usagef(cmd, "-F must be positive")
			}
			for _, e := range opts.Env {
				if !strings.Contains(e, "=") {
					return usagef(cmd, "-e %q: want VAR=VALUE", e)
				}
			}
			if opts.MemprofSample < 0 {
				return usagef(cmd, "--memprof-sample must not be negative")
			}
			if opts.MemprofSample > 0 && !opts.Memprof {
				return usagef(cmd, "--memprof-sample needs --memprof")
			}
			if opts.Memprof && len(args) == 0 {
				return usagef(cmd, "--memprof needs a command to run")
			}
			cg := fl.callGraph
			if cg == "" {
				cg = "fp"
			}
			dwarf, leaf, err := parseCallGraph(cg)
			if err != nil {
				return usagef(cmd, "%v", err)
			}
			opts.DWARFStack, opts.LeafStack = dwarf, leaf
			if opts.RedactCmdlines, err = record.ParseRedaction(fl.redact); err != nil {
				return usagef(cmd, "--redact-cmdlines: %v", err)
			}
			opts.Duration = time.Duration(fl.duration * float64(time.Second))
			return runRecord(cmd, fl, opts)
		},
	}
	cmd.Flags().SetInterspersed(false)
	f := cmd.Flags()
	f.StringVarP(&fl.output, "output", "o", "capture.syscap", "write the capture to `FILE`")
	f.BoolVarP(&fl.force, "force", "f", false, "overwrite FILE if it exists")
	f.IntSliceVarP(&opts.PIDs, "pid", "p", nil, "record existing processes `PID[,PID...]` and their threads")
	f.BoolVarP(&fl.all, "all-cpus", "a", false, "record the whole system (default without a command or -p)")
	f.Float64Var(&fl.duration, "duration", 0, "stop after `SECONDS`")
	f.IntVarP(&opts.Frequency, "freq", "F", 999, "sample at `HZ` per CPU")
	f.StringArrayVarP(&opts.Env, "env", "e", nil, "set `VAR=VALUE` in the command's environment (repeatable)")
	f.BoolVar(&opts.NoPerf, "no-perf", false, "do not sample stacks")
	f.BoolVar(&opts.OffCPU, "off-cpu", false, "also record the time threads spend off the CPU, with the stack and task state each left it in (sched:sched_switch); report --off-cpu or --wall shows it")
	f.StringVar(&fl.callGraph, "call-graph", "", "how user stacks are taken, `MODE` fp[,SIZE] (the default): frame pointers, with SIZE bytes of stack copied per sample (default 512) to find the caller the kernel's walk skips when the sampled function has set up no frame pointer (fp,0: the kernel's chain alone); or dwarf[,SIZE]: unwound from CFI while recording, SIZE bytes copied per sample (default 8192); SIZE at most 65528")
	f.BoolVarP(&fl.fp, "fp-call-graph", "g", false, "frame-pointer call graphs (the default; as perf record -g)")
	f.StringVar(&fl.redact, "redact-cmdlines", "others", "cut command lines to the program's name: `WHOSE` others (the default: processes of users other than you, SUDO_UID when run through sudo, and the user nsprof runs as), all, or none")
	f.BoolVar(&opts.NoDecode, "no-decode", false, "do not bundle symbol names (reports then need the recorded files at the same paths)")
	f.BoolVar(&opts.NoCPU, "no-cpu", false, "do not record CPU usage and frequency")
	f.BoolVar(&opts.NoMemory, "no-memory", false, "do not record memory usage")
	f.BoolVar(&opts.NoDisk, "no-disk", false, "do not record disk operations")
	f.BoolVar(&opts.NoNetwork, "no-network", false, "do not record network traffic")
	f.BoolVar(&opts.RAPL, "rapl", false, "record RAPL energy counters (powercap)")
	f.BoolVar(&opts.TraceFD, "use-trace-fd", false, "give the command SYSPROF_TRACE_FD and merge what it writes")
	f.BoolVar(&opts.GJS, "gjs", false, "give the command GJS_TRACE_FD and GJS_ENABLE_PROFILER=1")
	f.BoolVar(&opts.GTK, "gtk", false, "give the command GTK_TRACE_FD")
	f.BoolVar(&opts.Memprof, "memprof", false, "record the command's heap allocations and frees (LD_PRELOAD "+record.MemprofLibName+", found next to nsprof or in $"+record.MemprofLibEnv+")")
	f.BoolVar(&opts.SysprofMemprof, "sysprof-memprof", false, "record the command's allocations with Sysprof's own collector ("+record.SysprofMemprofLibName+" preloaded, frames taken through SYSPROF_CONTROL_FD)")
	f.Int64Var(&opts.MemprofSample, "memprof-sample", 0, "with --memprof, record about one allocation per `BYTES` allocated, weighted so totals stay unbiased (0: every one)")
	return cmd
}

// exitCode makes nsprof exit with the recorded command's status.
type exitCode struct {
	code int
	msg  string
}

func (e *exitCode) Error() string { return e.msg }

func runRecord(cmd *cobra.Command, fl recordFlags, opts record.Options) error {
	stderr := cmd.ErrOrStderr()
	f, err := createOutput(fl.output, fl.force, 0o640)
	if err != nil {
		return err
	}
	defer f.Discard() // when an error returns before Close
	w, err := capture.NewWriterWithOptions(f.File, capture.WriterOptions{BufferSize: 4 << 20})
	if err != nil {
		return fmt.Errorf("%s: %w", fl.output, err)
	}
	opts.Version = versionString()
	opts.Log = stderr
	if sf, ok := stderr.(*os.File); ok && unix.IsTerminal(int(sf.Fd())) {
		opts.Status = stderr
		opts.StatusWidth = unix.TerminalWidth(int(sf.Fd()))
	}
	res, recErr := record.Record(cmd.Context(), w, opts)
	closeErr := w.Close()
	if recErr == nil && closeErr != nil {
		recErr = closeErr
	}
	if recErr != nil && !res.Started {
		// Nothing was recorded: leave no file behind, so that the
		// retry needs no -f (an existing file that -f was to replace
		// stays as it was).
		return fmt.Errorf("recording to %s: %w (nothing recorded, %s not written)", fl.output, recErr, fl.output)
	}
	size := fileSize(f.File)
	if err := f.Close(); recErr == nil {
		recErr = err
	}
	if recErr != nil {
		return fmt.Errorf("recording to %s: %w; frames flushed before the error are readable (%d bytes)", fl.output, recErr, size)
	}
	fmt.Fprintf(stderr, "nsprof: %s\n", res.Summary(fl.output))
	if res.Stopped == "signal" {
		fmt.Fprintf(stderr, "nsprof: stopped by signal\n")
	}
	if res.Exit != "" && res.ExitCode != 0 {
		return &exitCode{code: res.ExitCode, msg: "command " + res.Exit}
	}
	return nil
}

func fileSize(f *os.File) int64 {
	st, err := f.Stat()
	if err != nil {
		return 0
	}
	return st.Size()
}
