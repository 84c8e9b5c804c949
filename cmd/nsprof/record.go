package main

import (
	"errors"
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
	"nsprof/symcache"
)

// recordFlags are the command-line settings of `nsprof record` that are
// not record.Options fields.
type recordFlags struct {
	output    string
	force     bool
	duration  float64
	all       bool
	callGraph string
	probes    []string
	fp        bool
	redact    string
	// freq is -F: a rate in Hz or "max"; events are the -e values.
	freq   string
	events []string
	// spans are the --span values, LIB:FUNCTION.
	spans []string
	// symbolCache is --symbol-cache; noSymbolCache --no-symbol-cache.
	symbolCache   string
	noSymbolCache bool
}

// symbolCacheDir returns the symbol cache directory the flags ask for: the
// default one unless --no-symbol-cache, "" for none.
func symbolCacheDir(fl recordFlags) (string, error) {
	switch {
	case fl.noSymbolCache && fl.symbolCache != "":
		return "", errors.New("--symbol-cache and --no-symbol-cache exclude each other")
	case fl.noSymbolCache:
		return "", nil
	case fl.symbolCache != "":
		return fl.symbolCache, nil
	}
	return symcache.DefaultDir()
}

// parseFreq parses -F: a rate in Hz, or "max" for the kernel's limit,
// kernel.perf_event_max_sample_rate, as perf takes it.
func parseFreq(v string) (int, error) {
	if v == "max" {
		n, err := perf.MaxSampleRate()
		if err != nil {
			return 0, fmt.Errorf("-F max: %v", err)
		}
		return n, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("-F %q: want a sampling rate in Hz (a whole number above 0) or max", v)
	}
	return n, nil
}

// parseEvents splits the -e values: VAR=VALUE sets an environment
// variable of the command (sysprof-cli's --env), anything else names the
// event to sample on, as perf record -e takes it: one of perf's event
// names, or a tracepoint subsystem:event.
func parseEvents(values []string) (env []string, ev perf.Event, tracepoint string, err error) {
	var named string
	for _, v := range values {
		if strings.Contains(v, "=") {
			env = append(env, v)
			continue
		}
		if named != "" {
			return nil, 0, "", fmt.Errorf("-e %s and -e %s: nsprof samples on one event", named, v)
		}
		named = v
		base, mod, hasMod := strings.Cut(v, ":")
		if _, err := perf.ParseEvent(base); err == nil && hasMod {
			return nil, 0, "", fmt.Errorf("-e %q: event modifiers (:%s) are not supported; nsprof samples user and kernel space (user space only where kernel.perf_event_paranoid requires it)", v, mod)
		}
		if hasMod {
			tracepoint = v
			continue
		}
		if ev, err = perf.ParseEvent(v); err != nil {
			return nil, 0, "", fmt.Errorf("-e %q: want VAR=VALUE, a tracepoint subsystem:event, or an event: %s", v, perf.EventNames())
		}
	}
	return env, ev, tracepoint, nil
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
children; its exit status becomes nsprof's), existing processes with -p,
a running podman container with --container (its name or an id prefix:
every process in its cgroup, those it starts and those podman exec adds,
as perf record -a -G samples a cgroup; told by its PID namespace when it
has no cgroup of its own, rootless where cgroups are v1) or a running
Flatpak app (--container APP-ID: the processes of its sandboxes' PID
namespaces, those flatpak enter adds included), or the whole system with
-a (the default without a command or -p; with a command, the whole
system while the command runs, as perf record -a does).

-e takes both habits: VAR=VALUE sets a variable in the command's environment
(sysprof-cli's --env); a name without "=" is the event to sample on, as perf
record -e takes it: cpu-clock (the default), task-clock, page-faults,
context-switches, or the hardware events cycles, instructions, cache-misses,
branch-misses, or a tracepoint subsystem:event (every hit sampled, with
its stack). Without a PMU (most virtual machines), cycles samples cpu-clock
with a warning, as perf does, and the other hardware events are refused.

-F takes a rate in Hz or max (kernel.perf_event_max_sample_rate). Routine
notes (counters this machine lacks, what symbolization took) show with -v;
warnings about anything lost or not recorded always show.

Recording stops when the command exits, after --duration, or on Ctrl-C or
SIGTERM; the capture is complete in every case.`,
		Example: `  nsprof record -- ./myprogram --its-flags
  nsprof record -p 1234 --duration 10 -o server.syscap
  nsprof record -a --duration 5
  nsprof record --container web --duration 10 -o web.syscap
  nsprof record --container org.gnome.TextEditor --duration 10
  nsprof record -g -F 99 -a -- sleep 3
  nsprof record -e task-clock -F max -- ./myprogram
  nsprof record --call-graph dwarf -- ./built-without-frame-pointers
  nsprof record --use-trace-fd -e G_MESSAGES_DEBUG=all -- gjs app.js
  nsprof record --memprof --no-perf -- ./myprogram`,
		Args: func(cmd *cobra.Command, args []string) error { return nil },
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Command = args
			if len(args) > 0 && len(opts.PIDs) > 0 {
				return usagef(cmd, "give either a command or -p, not both")
			}
			if fl.all && len(opts.PIDs) > 0 {
				return usagef(cmd, "-a records the whole system; it does not combine with -p")
			}
			if opts.Container != "" && (fl.all || len(opts.PIDs) > 0) {
				return usagef(cmd, "--container records one container; it does not combine with -a or -p")
			}
			opts.System = fl.all && len(args) > 0
			if fl.duration < 0 {
				return usagef(cmd, "--duration must not be negative")
			}
			var err error
			if opts.Frequency, err = parseFreq(fl.freq); err != nil {
				return usagef(cmd, "%v", err)
			}
			if opts.Env, opts.Event, opts.Tracepoint, err = parseEvents(fl.events); err != nil {
				return usagef(cmd, "%v", err)
			}
			if opts.MemprofSample < 0 {
				return usagef(cmd, "--memprof-sample must not be negative")
			}
			if opts.MemprofSample > 0 && !opts.Memprof {
				return usagef(cmd, "--memprof-sample needs --memprof")
			}
			if opts.Memprof && len(args) == 0 {
				return usagef(cmd, "--memprof: %v", record.ErrPreloadNeedsCommand)
			}
			if opts.Calls && len(args) == 0 {
				return usagef(cmd, "--calls: %v", record.ErrPreloadNeedsCommand)
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
			if opts.SymbolCache, err = symbolCacheDir(fl); err != nil {
				return usagef(cmd, "%v", err)
			}
			for _, s := range fl.spans {
				spec, err := record.ParseProbeSpec(s)
				if err != nil {
					return usagef(cmd, "--span: %v", err)
				}
				opts.Spans = append(opts.Spans, spec)
			}
			for _, s := range fl.probes {
				spec, err := record.ParseProbeSpec(s)
				if err != nil {
					return usagef(cmd, "--probe: %v", err)
				}
				opts.Probes = append(opts.Probes, spec)
			}
			if len(opts.Probes) > 0 {
				if len(args) == 0 && len(opts.PIDs) == 0 {
					return usagef(cmd, "--probe needs a command or -p")
				}
				if opts.Calls {
					return usagef(cmd, "--probe and --calls both record call arcs: use one")
				}
				opts.ProbeCallers = fl.callGraph != "" || fl.fp
			} else if opts.ProbeMarks {
				return usagef(cmd, "--probe-marks needs --probe")
			}
			if (opts.MainLoop || len(opts.Spans) > 0) && len(args) == 0 && len(opts.PIDs) == 0 {
				return usagef(cmd, "--speedtrack and --span need a command or -p")
			}
			return runRecord(cmd, fl, opts)
		},
	}
	cmd.Flags().SetInterspersed(false)
	f := cmd.Flags()
	f.StringVarP(&fl.output, "output", "o", "capture.syscap", "write the capture to `FILE`")
	f.BoolVarP(&fl.force, "force", "f", false, "overwrite FILE if it exists")
	f.IntSliceVarP(&opts.PIDs, "pid", "p", nil, "record existing processes `PID[,PID...]` and their threads")
	f.BoolVarP(&fl.all, "all-cpus", "a", false, "record the whole system (default without a command or -p; with a command, while it runs)")
	f.StringVar(&opts.Container, "container", "", "record the running podman container `NAME` (or id prefix), or Flatpak app (its app id), alone: its cgroup's (or PID namespace's) processes, those podman exec or flatpak enter adds included")
	f.Float64Var(&fl.duration, "duration", 0, "stop `SECONDS` after setting up (perf events open, processes read)")
	f.StringVarP(&fl.freq, "freq", "F", "999", "sample at `HZ` per CPU, or max (kernel.perf_event_max_sample_rate)")
	f.StringArrayVarP(&fl.events, "env", "e", nil, "`VAR=VALUE`: set in the command's environment (repeatable); EVENT (no '='): sample on it, as perf record -e: cpu-clock (default), task-clock, page-faults, context-switches, cycles, instructions, cache-misses, branch-misses, or a tracepoint subsystem:event")
	f.BoolVarP(&opts.Verbose, "verbose", "v", false, "also print routine notes (counters not available, symbolization and unwinding statistics)")
	f.BoolVar(&opts.NoPerf, "no-perf", false, "do not sample stacks")
	f.BoolVar(&opts.NoMmapBuildIDs, "no-mmap-build-ids", false, "have the kernel give device and inode numbers of mapped files, not their build-ids, so that perf recording at the same time is not disturbed (see README, Compatibility); build-ids are then read from the files")
	f.DurationVar(&opts.Blocking, "blocking", 0, "also record the system calls that take at least `DURATION` (5ms, say) as marks of group syscall, with the caller's stack (raw_syscalls tracepoints); report --marks summarizes them, report --value blocking shows their stacks")
	f.BoolVar(&opts.MainLoop, "speedtrack", false, "mark each GLib main-loop iteration (g_main_context_dispatch, probed with uprobes in the process's own libglib-2.0) on each process's main thread, as Sysprof's --speedtrack; report --marks flags the stalls")
	f.BoolVar(&opts.SpeedtrackPreload, "speedtrack-preload", false, "with --speedtrack, measure main-loop iterations with the LD_PRELOAD fallback ("+record.SpeedtrackLibName+": time busy between GLib's polls) even where user probes work")
	f.StringArrayVar(&fl.spans, "span", nil, "mark each call of `LIB:FUNCTION` on the recorded threads and those they start (uprobes; LIB a path or a file name such as libfoo or prog; FUNCTION a name or glob; repeatable); report --marks flags the slow ones")
	f.StringArrayVar(&fl.probes, "probe", nil, "count and time each call of `LIB:FUNCTION` on the recorded threads and those they start (uprobe and uretprobe placed by file offset in the file the process maps; LIB and FUNCTION as for --span; repeatable): calls, total, self, shortest, longest per function and thread, for report --calls; with --call-graph or -g also per caller")
	f.BoolVar(&opts.ProbeMarks, "probe-marks", false, "with --probe, also mark each call (group probe) for the timeline")
	f.BoolVar(&opts.OffCPU, "off-cpu", false, "also record the time threads spend off the CPU, with the stack and task state each left it in (sched:sched_switch); report --off-cpu or --wall shows it")
	f.DurationVar(&opts.OffCPUMarks, "off-cpu-marks", record.DefaultOffCPUMarks, "with --off-cpu, also write the off-CPU intervals of at least `DURATION` as marks of group off-cpu, which Sysprof's timeline shows (negative: none); all intervals' stacks are kept either way")
	f.StringVar(&opts.OffCPUSwitchIns, "off-cpu-switch-ins", "", "with --off-cpu, take the switch-ins from `bpf` (or fail) or perf (SWITCH records, which also see the switches a kernel leaves untraced, where intervals from bpf end at a CPU sample); default: bpf when it loads, else perf")
	f.StringVar(&opts.OffCPUKernelStacks, "off-cpu-kernel-stacks", "", "with --off-cpu, take the kernel stacks of the switch outs from `bpf` (the switch-in program, walked once in 16 switch outs of a thread at one place) or perf (every switch out); default: bpf when it can, else perf")
	f.MarkHidden("off-cpu-kernel-stacks")
	f.StringVar(&fl.callGraph, "call-graph", "", "how user stacks are taken, `MODE` fp[,SIZE] (the default): frame pointers, with SIZE bytes of stack copied per sample (default 512) to find the caller the kernel's walk skips when the sampled function has set up no frame pointer (fp,0: the kernel's chain alone); or dwarf[,SIZE]: unwound from CFI while recording, SIZE bytes copied per sample (default 8192); SIZE at most 65528")
	f.BoolVarP(&fl.fp, "fp-call-graph", "g", false, "frame-pointer call graphs (the default; as perf record -g)")
	f.StringVar(&fl.redact, "redact-cmdlines", "others", "cut command lines to the program's name: `WHOSE` others (the default: processes of users other than you, SUDO_UID when run through sudo, and the user nsprof runs as), all, or none")
	f.StringVar(&fl.symbolCache, "symbol-cache", "", "keep the symbol tables and source lines of the files samples hit in `DIR`, by build-id, for later recordings of the same binaries (default /var/cache/nsprof/symbols for root, else $XDG_CACHE_HOME/nsprof/symbols); DIR must be the user's and writable by no one else")
	f.BoolVar(&fl.noSymbolCache, "no-symbol-cache", false, "neither read nor write the symbol cache")
	f.BoolVar(&opts.NoDecode, "no-decode", false, "do not bundle symbol names (reports then need the recorded files at the same paths)")
	f.BoolVar(&opts.NoCPU, "no-cpu", false, "do not record CPU usage and frequency")
	f.BoolVar(&opts.NoMemory, "no-memory", false, "do not record memory usage")
	f.BoolVar(&opts.NoDisk, "no-disk", false, "do not record disk operations")
	f.BoolVar(&opts.NoNetwork, "no-network", false, "do not record network traffic")
	f.BoolVar(&opts.RAPL, "rapl", false, "record RAPL energy counters (powercap)")
	f.BoolVar(&opts.TraceFD, "use-trace-fd", false, "give the command SYSPROF_TRACE_FD and merge what it writes")
	f.BoolVar(&opts.GJS, "gjs", false, "give the command GJS_TRACE_FD and GJS_ENABLE_PROFILER=1")
	f.BoolVar(&opts.GTK, "gtk", false, "give the command SYSPROF_CONTROL_FD (what GTK 4 writes its marks to) and GTK_TRACE_FD (GTK 3 and GTK 4.0-4.4)")
	f.BoolVar(&opts.Memprof, "memprof", false, "record the command's heap allocations and frees (LD_PRELOAD "+record.MemprofLibName+", found next to nsprof or in $"+record.MemprofLibEnv+")")
	f.BoolVar(&opts.Calls, "calls", false, "count the calls of the command's code built with -pg or -finstrument-functions, per caller, timed for -finstrument-functions (LD_PRELOAD "+record.MemprofLibName+", as --memprof)")
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
	// The writer's default buffer (256 KiB): touched in full within a
	// second at 4 kHz, a larger one is held in memory for the whole
	// recording, and a flush a few times a second costs nothing seen.
	w, err := capture.NewWriterWithOptions(f.File, capture.WriterOptions{})
	if err != nil {
		return fmt.Errorf("%s: %w", fl.output, err)
	}
	opts.Version = versionString()
	opts.Log = stderr
	opts.ReleasePages = releasePages
	if sf, ok := stderr.(*os.File); ok && unix.IsTerminal(int(sf.Fd())) {
		opts.Status = stderr
		opts.StatusWidth = unix.TerminalWidth(int(sf.Fd()))
	}
	res, recErr := record.Record(cmd.Context(), w, opts)
	defer res.Fill.Close() // unless started below
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
	// The capture is closed: what is left for the symbol cache is done
	// by a process of its own, for the next recording of these files.
	record.StartFill(res.Fill, func(format string, args ...any) {
		fmt.Fprintf(stderr, "nsprof: "+format+"\n", args...)
	})
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
