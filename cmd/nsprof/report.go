package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"nsprof/analyze"
	"nsprof/internal/textsafe"
	"nsprof/internal/unix"
	nsreport "nsprof/report"
)

// reportOptions are the settings of `nsprof report`: the capture, which
// view to load, and the report package's options, which the flags fill.
type reportOptions struct {
	// Input is the capture's path.
	Input string
	// Report are the options of the view; Report.View and Report.Format
	// are set from the flags below by options.
	Report nsreport.Options
	// Tree and BottomUp choose the call-tree views instead of the
	// function table; JSON the JSON document instead of text.
	Tree, BottomUp, JSON bool
	// Memory prints the heap profile of the ALLOCATION frames instead;
	// with any other view, grouping or selection flag than --pid it is
	// a shorthand for Value "alloc_space".
	Memory bool
	// Calls prints the flat profile and call graph of the instrumented
	// calls (record --calls) instead, as gprof does.
	Calls bool
	// Value names the sample type the sample views weigh by
	// ([analyze.Profile.ValueIndex]); "" for the number of samples.
	Value string
	// Timeline is a view of the capture's timeline instead of samples:
	// "marks", "counters", "processes", "logs" or "summary"; "" for none.
	Timeline string
	// Partial accepts a damaged capture: the report of the frames before
	// the damage, a warning, and status 0. Without it the same report
	// ends with the error and status 1.
	Partial bool
	// Addresses gives each unnamed address a function of its own
	// ([analyze.LoadOptions.Addresses]).
	Addresses bool
	// DiffBase names a capture the function table is compared with
	// (report.Data.Base); "" for none.
	DiffBase string
}

func newReportCmd() *cobra.Command {
	var (
		opts   reportOptions
		sel    selectFlags
		sortBy string
		input  string
		stdio  bool
		views  = map[string]*bool{"marks": new(bool), "counters": new(bool), "processes": new(bool), "logs": new(bool), "summary": new(bool)}
	)
	cmd := &cobra.Command{
		Use:   "report [flags] [FILE]",
		Short: "Show where the samples of a capture spent their time",
		Long: `Report reads a capture (default capture.syscap) and prints the functions its
stack samples were taken in: Self% is the share of samples taken in the
function itself, Total% the share with the function anywhere on the stack
(recursion counted once). --tree prints the top-down call tree, --bottom-up
the callers tree of each function samples were taken in. --by splits any view
into one section per process, thread or container.

Names come from the capture: the __symbols__ bundle that nsprof record (and
Sysprof) append unless --no-decode, JITMAP frames, and the embedded
/proc/kallsyms for kernel code. Other addresses make one function per file,
"[unknown in FILE]" (or "[unknown]" outside any file); with --addresses one
per address, FILE+0xOFFSET (the offset in the mapped file) or
"[unknown] 0xADDRESS".

Filters combine: --pid, --tid, --comm (regular expression over comm and command
line), --container ("host", a podman name or id prefix, a Flatpak app id),
--dso (samples with a frame in a DSO whose name contains the text) and
--since/--until (seconds from the capture's start, or durations like 250ms).
--hide-kernel charges kernel time to the calling user function; --focus NAME
keeps the samples through function NAME with their stacks starting there
(--focus-dso the same for a DSO); --by comm merges processes of the same name.

--value TYPE weighs every view by a sample type of the capture: samples (the
default), cpu (nanoseconds, when the recording says its period), of a
record --off-cpu capture off_cpu (time off the CPU, under a leaf frame
naming the task state; --off-cpu) or wall (on-CPU and off-CPU time; --wall),
or of a --memprof capture alloc_space, alloc_objects, inuse_space or
inuse_objects (bytes and blocks allocated, and those never freed),
temp_space or temp_objects (freed by the allocating thread before its next
allocation). --by state splits on-CPU samples from each task state's
off-CPU time. --calls prints, for a record --calls capture, a gprof-style
flat profile (% time, cumulative and self seconds, calls, self and total
time per call, name) and call graph (each function's callers and callees
with their calls); self time is the instrumentation's for
-finstrument-functions code and the CPU samples' for -pg code, whose calls
are counted but not timed; calls, call_time and call_self_time are --value
types and export columns. --memory prints the heap profile of the allocations selected
(every filter, --hide-kernel and --focus apply): totals, peak live bytes,
functions by bytes and by count, the call tree, leaks and temporaries by
stack; with --json, --tree, --bottom-up or --by it is a shorthand for
--value alloc_space.

Instead of samples, --marks prints per group:name mark counts and durations
(min, max, mean, median, p95), the probed calls of record --speedtrack and
--span over --stall (16ms, one frame at 60 Hz, by default) with the longest
of them and the stack most of their thread's samples within share (in JSON:
"stall_threshold_ns", "stall_counts", "stalls"), and what
the SYSPROF_CONTROL_FD rings lost, --counters each counter's min, mean and max
with a sparkline, --processes process lifetimes, pids inside and outside
their namespace, container and command line, with each thread under its
process ("thread_list" in JSON), --logs the log messages and --summary the
capture's facts (duration, CPUs, samples, lost samples, processes and
threads, collector frames and losses, frames by type). --since/--until,
--pid and --container select marks, logs and processes too.

perf report's habits work: -i FILE, --stdio (text, the default) and -g (the
call tree, as --tree).

--diff-base BASE compares the function table with that of capture BASE, as
perf diff and pprof's -diff_base do: the same selection (filters, --value,
--hide-kernel, --focus) in both, and for each function (by name and DSO)
its self and total shares in BASE and in FILE and their difference in
percentage points, the largest change first (of the total share with
--sort total); a function sampled in one capture only has 0 in the other.
Pids differ from one recording to the next: --comm selects a program in both.
In JSON: "base" (as "capture"), "base_selected" and "diff": [{"function",
"dso", "kernel", "base_self", "base_total", "self", "total",
"base_self_percent", "base_total_percent", "self_percent", "total_percent",
"self_delta", "total_delta"}].

--json prints one document (schema "nsprof-report/1"):
  {"schema", "capture": {"file", "capture_time", "duration_seconds", "samples",
   "processes", "lost_samples" (only with the counter), "symbols": {SOURCE: frames},
   "warnings", "damage"}, "selected", "sample_type" ({"type", "unit"}, with
   --value other than samples), "view" ("top", "tree", "bottom-up" or "calls"),
   "group_by", "groups": [{"key", "pid", "tid", "comm", "cmdline", "nspid",
   "container", "container_id" (a Podman container's full id), "samples", "value"
   (with "sample_type"), "functions": [{"function", "dso", "kernel", "self",
   "total", "self_percent", "total_percent"}], "tree": {"function", "dso",
   "kernel", "self", "total", "children": [...]}}], "calls" (--calls: "groups" is
   empty): {"timed", "self_time_source", "cpu_period_ns", "functions":
   [{"function", "dso", "calls", "total_ns", "self_ns", "samples", "cpu_ns"}],
   "arcs": [{"caller", "caller_dso", "callee", "callee_dso", "calls", "total_ns",
   "self_ns"}]}}

A damaged capture is reported up to the damage, then nsprof names the file,
the byte offset and what is damaged, and exits with status 1 so that scripts
notice; --partial accepts it with a warning and status 0.`,
		Example: `  nsprof report
  nsprof report --limit 20 server.syscap
  nsprof report --tree --depth 12 --min-percent 2 --comm myserver
  nsprof report --stdio -g -i perf-habits.syscap
  nsprof report --bottom-up --dso libc
  nsprof report --by container --container web
  nsprof report --by thread --pid 1234 --since 2 --until 5
  nsprof report --lines --limit 20
  nsprof report --json > report.json
  nsprof report --tree --hide-kernel --focus handle_request
  nsprof report --marks --since 2 --until 5
  nsprof report --marks --stall 50ms
  nsprof report --counters --processes --summary
  nsprof report --diff-base before.syscap after.syscap`,
		Args: usageArgs(cobra.MaximumNArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			var err error
			if opts.Input, err = captureArg(cmd, args, input, "capture.syscap"); err != nil {
				return err
			}
			if opts.Report.Select, opts.Report.By, err = sel.parse(cmd); err != nil {
				return err
			}
			opts.Value, opts.Addresses = sel.value, sel.addresses
			if opts.Timeline, err = timelineView(cmd, views, opts); err != nil {
				return err
			}
			switch sortBy {
			case "self":
			case "total":
				opts.Report.SortTotal = true
			default:
				if by := perfSortBy(sortBy); by != "" {
					return usagef(cmd, "--sort: want self or total, not %q (perf report's --sort %s is --by %s here)", sortBy, sortBy, by)
				}
				return usagef(cmd, "--sort: want self or total, not %q", sortBy)
			}
			opts.Value = sel.value
			if opts.Memory {
				if opts.Value, err = memoryValue(opts.Value, analyze.AllocSpaceType.Type); err != nil {
					return usagef(cmd, "%v", err)
				}
				if opts.JSON || opts.Tree || opts.BottomUp || opts.Report.By != analyze.GroupNone {
					opts.Memory = false // the sample views of the allocations
				}
			}
			if opts.Tree && opts.BottomUp {
				return usagef(cmd, "--tree and --bottom-up cannot be combined")
			}
			if opts.Calls && (opts.Tree || opts.BottomUp || opts.Memory || opts.Timeline != "" || opts.Value != "" || opts.Report.By != analyze.GroupNone) {
				return usagef(cmd, "--calls does not combine with --tree, --bottom-up, --memory, --value, --by or the timeline views")
			}
			if opts.Report.Lines && (opts.Tree || opts.BottomUp || opts.Memory || opts.Calls || opts.Timeline != "" || opts.DiffBase != "") {
				return usagef(cmd, "--lines makes the function table's rows source lines: it does not combine with --tree, --bottom-up, --memory, --calls, --diff-base or the timeline views")
			}
			if opts.DiffBase != "" && (opts.Tree || opts.BottomUp || opts.Memory || opts.Calls || opts.Timeline != "" || opts.Report.By != analyze.GroupNone) {
				return usagef(cmd, "--diff-base compares function tables: it does not combine with --tree, --bottom-up, --memory, --calls, --by or the timeline views")
			}
			if r := opts.Report; r.Depth < 0 || r.MinPercent < 0 || r.MinPercent > 100 {
				return usagef(cmd, "--depth and --min-percent must be positive (--min-percent at most 100)")
			}
			if !cmd.Flags().Changed("limit") && !opts.JSON {
				opts.Report.Limit, opts.Report.Width = terminalFit(cmd.OutOrStdout(), opts.Report.By != analyze.GroupNone)
			} else if opts.Report.Limit == 0 {
				opts.Report.Limit = -1
			}
			return report(opts, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	f := cmd.Flags()
	sel.add(f)
	f.BoolVar(&opts.Tree, "tree", false, "print the top-down call tree")
	f.BoolVarP(&opts.Tree, "call-graph", "g", false, "the call tree, as perf report -g shows call graphs (the same as --tree)")
	f.StringVarP(&input, "input", "i", "", "read the capture `FILE` (as perf report -i; or give FILE as the argument)")
	f.BoolVar(&stdio, "stdio", false, "print text to standard output (the default; accepted as perf report takes it)")
	f.BoolVar(&opts.BottomUp, "bottom-up", false, "print the bottom-up (callers) tree")
	f.IntVar(&opts.Report.Depth, "depth", 8, "tree levels to print (0: all)")
	f.Float64Var(&opts.Report.MinPercent, "min-percent", 0.5, "leave out tree nodes under `PERCENT` of the samples")
	f.StringVar(&sortBy, "sort", "self", "sort the function table by `KEY`: self or total")
	f.BoolVar(&opts.Report.Lines, "lines", false, "one row per source line of a function (file:line from the lines the recording bundled; inlined calls at their own lines), as pprof -lines and perf report --sort sym,srcline")
	f.IntVarP(&opts.Report.Limit, "limit", "n", 0, "print `N` functions (per group); default fits the terminal, all when not a terminal; 0 all")
	f.BoolVar(&opts.Memory, "memory", false, "print the heap profile of a --memprof capture: top functions by bytes and count, call tree, leaks, temporary allocations, peak")
	f.BoolVar(&opts.Calls, "calls", false, "print the flat profile (calls, self and total time, per call) and call graph of a --calls capture, as gprof does")
	f.BoolVar(&opts.JSON, "json", false, "print a JSON document (schema nsprof-report/1) instead of text")
	f.BoolVar(views["marks"], "marks", false, "print mark statistics per group:name: count, min, max, mean, median, p95 duration; and the stalls of --speedtrack and --span")
	f.DurationVar(&opts.Report.Stall, "stall", 0, "with --marks, flag probed calls (record --speedtrack, --span) longer than `DURATION` (default 16ms)")
	f.BoolVar(views["counters"], "counters", false, "print each counter's min, mean and max with a sparkline")
	f.BoolVar(views["processes"], "processes", false, "print the processes: lifetime, pid and namespace pid, container, command line")
	f.BoolVar(views["logs"], "logs", false, "print the log messages")
	f.BoolVar(views["summary"], "summary", false, "print the capture's facts: duration, CPUs, samples, lost samples, frames by type")
	f.StringVar(&opts.DiffBase, "diff-base", "", "compare the function table with that of the capture `BASE` (as perf diff and pprof -diff_base): each function's self and total shares in both, the largest change first")
	f.BoolVar(&opts.Partial, "partial", false, "accept a damaged capture: report the frames before the damage with a warning and exit 0 (default: exit 1)")
	return cmd
}

// parseOffset parses a time offset: seconds ("2", "0.5") or a Go duration
// ("250ms", "1m").
func parseOffset(s string) (time.Duration, error) {
	if s == "" {
		return 0, nil
	}
	var d time.Duration
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		d = time.Duration(f * float64(time.Second))
	} else if d, err = time.ParseDuration(s); err != nil {
		return 0, fmt.Errorf("%q is neither seconds nor a duration like 1.5s", s)
	}
	if d < 0 {
		return 0, fmt.Errorf("%q is negative", s)
	}
	return d, nil
}

// terminalFit returns the table rows and line width that fit the terminal
// at w, or (-1, 0) when w is not a terminal. The height comes from $LINES
// (24 by default); grouped reports show 10 rows per group.
func terminalFit(w io.Writer, grouped bool) (limit, width int) {
	f, ok := w.(*os.File)
	if !ok || !unix.IsTerminal(int(f.Fd())) {
		return -1, 0
	}
	width = unix.TerminalWidth(int(f.Fd()))
	lines := 24
	if n, err := strconv.Atoi(os.Getenv("LINES")); err == nil && n > 0 {
		lines = n
	}
	if grouped {
		return 10, width
	}
	return max(10, lines-5), width
}

// report runs `nsprof report`: it loads what the view needs and renders
// it with package report.
func report(opts reportOptions, stdout, stderr io.Writer) error {
	ro := opts.options()
	if ro.View.Timeline() {
		return reportTimeline(opts, ro, stdout, stderr)
	}
	defer analyze.LimitMemory(regularSize(opts.Input))()
	prog := progressLine(stderr)
	defer prog.Clear()
	p, loadErr := analyze.LoadFile(opts.Input, analyze.LoadOptions{NoAllocations: stackValue(opts.Value), Addresses: opts.Addresses, Progress: prog.Report, FewerGCs: true})
	prog.Clear()
	if p == nil {
		return loadErr
	}
	var err error
	done := fmt.Sprintf("reported the %d samples before the damage", p.Totals[0])
	if loadErr != nil && opts.Partial {
		fmt.Fprintf(stderr, "nsprof: warning: %s; %s\n", textsafe.Escape(loadErr.Error()), done)
	}
	warn(stderr, opts.Input, p.Warnings)
	if opts.Memory && !p.HasAllocations() {
		opts.Value = "" // the memory view says there is nothing to show
	}
	if opts.Report.Select.Value, err = p.ValueIndex(opts.Value); err != nil {
		return fmt.Errorf("--value: %s: %w", opts.Input, err)
	}
	ro.Select.Value = opts.Report.Select.Value
	opts.Report.Select.AllKinds = opts.Calls
	prog.Report(progressView, 0, 0)
	v, err := p.View(opts.Report.Select)
	prog.Clear()
	if err != nil {
		return err
	}
	ro.Damage = loadErr
	data := nsreport.Data{View: v}
	if opts.DiffBase != "" {
		if data.Base, err = diffBase(opts, stderr); err != nil {
			return err
		}
		ro.BaseFile = opts.DiffBase
	}
	bw := bufio.NewWriterSize(stdout, 64*1024)
	err = nsreport.Generate(bw, data, ro)
	if ferr := bw.Flush(); err == nil {
		err = ferr
	}
	if err == nil && loadErr != nil && !opts.Partial {
		err = damageError(loadErr, done)
	}
	return err
}

// reportTimeline runs the timeline views of `nsprof report`.
func reportTimeline(opts reportOptions, ro nsreport.Options, stdout, stderr io.Writer) error {
	t, loadErr := analyze.LoadTimelineFile(opts.Input)
	if t == nil {
		return loadErr
	}
	const done = "reported the frames before the damage"
	if loadErr != nil && opts.Partial {
		fmt.Fprintf(stderr, "nsprof: warning: %s; %s\n", textsafe.Escape(loadErr.Error()), done)
	}
	warn(stderr, opts.Input, t.Warnings)
	ro.Damage = loadErr
	d := nsreport.Data{Timeline: t}
	if ro.View == nsreport.ViewMarks {
		d.View = stallSamples(opts, ro, t, stderr)
	}
	bw := bufio.NewWriterSize(stdout, 64*1024)
	err := nsreport.Generate(bw, d, ro)
	if ferr := bw.Flush(); err == nil {
		err = ferr
	}
	if err == nil && loadErr != nil && !opts.Partial {
		err = damageError(loadErr, done)
	}
	return err
}

// damageError is how report and export end on a damaged capture without
// --partial, after output covering the frames before the damage (done
// says what): with loadErr, which names the file, the offset and what is
// damaged, so that the status is 1.
func damageError(loadErr error, done string) error {
	return fmt.Errorf("%w; %s (--partial accepts a damaged capture with status 0)", loadErr, done)
}

// options returns the report package's options for o.
func (o *reportOptions) options() nsreport.Options {
	ro := o.Report
	ro.View, ro.File = nsreport.ViewTop, o.Input
	switch {
	case o.Timeline != "":
		ro.View = timelineViewOf(o.Timeline)
	case o.Memory:
		ro.View = nsreport.ViewMemory
	case o.Calls:
		ro.View = nsreport.ViewCalls
	case o.Tree:
		ro.View = nsreport.ViewTree
	case o.BottomUp:
		ro.View = nsreport.ViewBottomUp
	}
	if o.JSON {
		ro.Format = nsreport.JSON
	}
	return ro
}

// warn prints the warnings of loading the capture at input, escaped: they
// may quote what the capture holds.
func warn(stderr io.Writer, input string, warnings []string) {
	for _, w := range warnings {
		fmt.Fprintf(stderr, "nsprof: warning: %s: %s\n", textsafe.Escape(input), textsafe.Escape(w))
	}
}

// stackValue reports whether the sample type named value (or the default,
// "") is one of the stack samples', so that loading can leave the
// allocations out.
func stackValue(value string) bool {
	return value == "" || value == analyze.SamplesType.Type || value == analyze.CPUType.Type
}

// stallSamples loads the stack samples of the capture for the stacks of
// the stalls the marks view lists, only when it has any: nil otherwise,
// or when they cannot be loaded (said on stderr).
func stallSamples(opts reportOptions, ro nsreport.Options, t *analyze.Timeline, stderr io.Writer) *analyze.View {
	th := int64(ro.Stall)
	if th <= 0 {
		th = analyze.DefaultStall
	}
	if st, _ := analyze.Stalls(t.Marks, th); len(st) == 0 {
		return nil
	}
	p, err := analyze.LoadFile(opts.Input, analyze.LoadOptions{NoAllocations: true, Addresses: opts.Addresses})
	if p == nil {
		fmt.Fprintf(stderr, "nsprof: warning: stacks of the stalls: %s\n", textsafe.Escape(err.Error()))
		return nil
	}
	v, err := p.View(analyze.ViewOptions{})
	if err != nil {
		fmt.Fprintf(stderr, "nsprof: warning: stacks of the stalls: %s\n", textsafe.Escape(err.Error()))
		return nil
	}
	return v
}

// diffBase loads the capture opts.DiffBase and selects its samples as
// opts selects the main capture's, for the comparison.
func diffBase(opts reportOptions, stderr io.Writer) (*analyze.View, error) {
	p, err := analyze.LoadFile(opts.DiffBase, analyze.LoadOptions{NoAllocations: stackValue(opts.Value), Addresses: opts.Addresses, FewerGCs: true})
	if p == nil {
		return nil, err
	}
	if err != nil {
		if !opts.Partial {
			return nil, err
		}
		fmt.Fprintf(stderr, "nsprof: warning: %s; the base's samples before the damage are compared\n", textsafe.Escape(err.Error()))
	}
	warn(stderr, opts.DiffBase, p.Warnings)
	sel := opts.Report.Select
	if sel.Value, err = p.ValueIndex(opts.Value); err != nil {
		return nil, fmt.Errorf("--value: %s: %w", opts.DiffBase, err)
	}
	return p.View(sel)
}

// perfSortBy returns the --by group that stands for perf report's --sort
// keys (comma-separated), the first that groups: "" when none does.
func perfSortBy(keys string) string {
	for _, k := range strings.Split(keys, ",") {
		switch strings.TrimSpace(k) {
		case "comm":
			return "comm"
		case "dso":
			return "dso"
		case "pid":
			return "process"
		case "tid":
			return "thread"
		}
	}
	return ""
}
