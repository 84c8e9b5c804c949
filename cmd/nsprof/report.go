package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"nsprof/analyze"
	"nsprof/internal/textsafe"
	"nsprof/internal/unix"
)

// reportOptions are the settings of `nsprof report`.
type reportOptions struct {
	// Input is the capture's path.
	Input string
	// View selects and shapes the samples (Filter, HideKernel, Focus…).
	View analyze.ViewOptions
	By   analyze.GroupBy
	// Tree and BottomUp choose the call-tree views instead of the
	// function table.
	Tree, BottomUp bool
	Depth          int
	MinPercent     float64
	// SortTotal sorts the function table by total instead of self samples.
	SortTotal bool
	// Limit is the number of table rows (per group); 0 fits the terminal
	// or prints all when not writing to one; -1 prints all.
	Limit int
	// Width truncates lines to this many columns; 0 does not.
	Width int
	JSON  bool
	// Memory prints the heap profile of the ALLOCATION frames instead.
	Memory bool
	// Timeline is a view of the capture's timeline instead of samples:
	// "marks", "counters", "processes", "logs" or "summary"; "" for none.
	Timeline string
	// Partial accepts a damaged capture: the report of the frames before
	// the damage, a warning, and status 0. Without it the same report
	// ends with the error and status 1.
	Partial bool
}

// reportSchema names the --json document format. Any change that is not
// adding a field changes the version.
const reportSchema = "nsprof-report/1"

func newReportCmd() *cobra.Command {
	var (
		opts   reportOptions
		sel    selectFlags
		sortBy string
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
/proc/kallsyms for kernel code. Other addresses show as FILE+0xOFFSET (the
offset in the mapped file) or "[unknown] 0xADDRESS".

Filters combine: --pid, --tid, --comm (regular expression over comm and command
line), --container ("host", a podman name or id prefix, a Flatpak app id),
--dso (samples with a frame in a DSO whose name contains the text) and
--since/--until (seconds from the capture's start, or durations like 250ms).
--hide-kernel charges kernel time to the calling user function; --focus NAME
keeps the samples through function NAME with their stacks starting there
(--focus-dso the same for a DSO); --by comm merges processes of the same name.

Instead of samples, --marks prints per group:name mark counts and durations
(min, max, mean, median, p95) and what the SYSPROF_CONTROL_FD rings lost, --counters each counter's min, mean and max
with a sparkline, --processes process lifetimes, pids inside and outside
their namespace, container and command line, with each thread under its
process ("thread_list" in JSON), --logs the log messages and --summary the
capture's facts (duration, CPUs, samples, lost samples, processes and
threads, collector frames and losses, frames by type). --since/--until and
--pid select marks, logs and processes too.

--json prints one document (schema "nsprof-report/1"):
  {"schema", "capture": {"file", "capture_time", "duration_seconds", "samples",
   "processes", "lost_samples" (only with the counter), "symbols": {SOURCE: frames},
   "warnings", "damage"}, "selected", "view" ("top", "tree" or "bottom-up"),
   "group_by", "groups": [{"key", "pid", "tid", "comm", "cmdline", "nspid",
   "container", "samples", "functions": [{"function", "dso", "kernel", "self",
   "total", "self_percent", "total_percent"}], "tree": {"function", "dso",
   "kernel", "self", "total", "children": [...]}}]}

A damaged capture is reported up to the damage, then nsprof names the file,
the byte offset and what is damaged, and exits with status 1 so that scripts
notice; --partial accepts it with a warning and status 0.`,
		Example: `  nsprof report
  nsprof report --limit 20 server.syscap
  nsprof report --tree --depth 12 --min-percent 2 --comm myserver
  nsprof report --bottom-up --dso libc
  nsprof report --by container --container web
  nsprof report --by thread --pid 1234 --since 2 --until 5
  nsprof report --json > report.json
  nsprof report --tree --hide-kernel --focus handle_request
  nsprof report --marks --since 2 --until 5
  nsprof report --counters --processes --summary`,
		Args: usageArgs(cobra.MaximumNArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Input = "capture.syscap"
			if len(args) == 1 {
				opts.Input = args[0]
			}
			var err error
			if opts.View, opts.By, err = sel.parse(cmd); err != nil {
				return err
			}
			if opts.Timeline, err = timelineView(cmd, views, opts); err != nil {
				return err
			}
			switch sortBy {
			case "self":
			case "total":
				opts.SortTotal = true
			default:
				return usagef(cmd, "--sort: want self or total, not %q", sortBy)
			}
			if opts.Memory && (opts.JSON || opts.Tree || opts.BottomUp || opts.By != analyze.GroupNone) {
				return usagef(cmd, "--memory prints its own views; it does not combine with --json, --tree, --bottom-up or --by")
			}
			if opts.Memory {
				if msg := memorySelectionError(opts.View, analyze.GroupNone); msg != "" {
					return usagef(cmd, "%s", msg)
				}
			}
			if opts.Tree && opts.BottomUp {
				return usagef(cmd, "--tree and --bottom-up cannot be combined")
			}
			if opts.Depth < 0 || opts.MinPercent < 0 || opts.MinPercent > 100 {
				return usagef(cmd, "--depth and --min-percent must be positive (--min-percent at most 100)")
			}
			if !cmd.Flags().Changed("limit") && !opts.JSON {
				opts.Limit, opts.Width = terminalFit(cmd.OutOrStdout(), opts.By != analyze.GroupNone)
			} else if opts.Limit == 0 {
				opts.Limit = -1
			}
			return report(opts, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	f := cmd.Flags()
	sel.add(f)
	f.BoolVar(&opts.Tree, "tree", false, "print the top-down call tree")
	f.BoolVar(&opts.BottomUp, "bottom-up", false, "print the bottom-up (callers) tree")
	f.IntVar(&opts.Depth, "depth", 8, "tree levels to print (0: all)")
	f.Float64Var(&opts.MinPercent, "min-percent", 0.5, "leave out tree nodes under `PERCENT` of the samples")
	f.StringVar(&sortBy, "sort", "self", "sort the function table by `KEY`: self or total")
	f.IntVarP(&opts.Limit, "limit", "n", 0, "print `N` functions (per group); default fits the terminal, all when not a terminal; 0 all")
	f.BoolVar(&opts.Memory, "memory", false, "print the heap profile of a --memprof capture: top functions by bytes and count, call tree, leaks, temporary allocations, peak")
	f.BoolVar(&opts.JSON, "json", false, "print a JSON document (schema nsprof-report/1) instead of text")
	f.BoolVar(views["marks"], "marks", false, "print mark statistics per group:name: count, min, max, mean, median, p95 duration")
	f.BoolVar(views["counters"], "counters", false, "print each counter's min, mean and max with a sparkline")
	f.BoolVar(views["processes"], "processes", false, "print the processes: lifetime, pid and namespace pid, container, command line")
	f.BoolVar(views["logs"], "logs", false, "print the log messages")
	f.BoolVar(views["summary"], "summary", false, "print the capture's facts: duration, CPUs, samples, lost samples, frames by type")
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

// report runs `nsprof report`.
func report(opts reportOptions, stdout, stderr io.Writer) error {
	if opts.Timeline != "" {
		return reportTimeline(opts, stdout, stderr)
	}
	p, loadErr := analyze.LoadFile(opts.Input, analyze.LoadOptions{})
	if p == nil {
		return loadErr
	}
	done := fmt.Sprintf("reported the %d samples before the damage", len(p.Samples))
	if loadErr != nil && opts.Partial {
		fmt.Fprintf(stderr, "nsprof: warning: %s; %s\n", textsafe.Escape(loadErr.Error()), done)
	}
	warn(stderr, opts.Input, p.Warnings)
	v, err := p.View(opts.View)
	if err != nil {
		return err
	}
	p, samples := v.Profile, v.Samples // the view's stacks
	groups := p.Group(samples, opts.By)
	bw := bufio.NewWriterSize(stdout, 64*1024)
	if opts.Memory {
		err = writeMemoryReport(bw, p, opts)
	} else if opts.JSON {
		err = writeReportJSON(bw, p, opts, samples, groups, loadErr)
	} else {
		err = writeReportText(bw, p, opts, samples, groups)
	}
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

// view returns "top", "tree" or "bottom-up".
func (o *reportOptions) view() string {
	switch {
	case o.Tree:
		return "tree"
	case o.BottomUp:
		return "bottom-up"
	}
	return "top"
}

func (o *reportOptions) tree(p *analyze.Profile, samples []analyze.Sample) *analyze.Node {
	return p.Tree(samples, analyze.TreeOptions{BottomUp: o.BottomUp, MaxDepth: o.Depth, MinPercent: o.MinPercent})
}

// top returns the function table's rows and how many functions there are
// in all.
func (o *reportOptions) top(p *analyze.Profile, samples []analyze.Sample) ([]analyze.FuncStat, int) {
	top := p.Top(samples)
	if o.SortTotal {
		analyze.SortByTotal(top)
	}
	n := len(top)
	if o.Limit > 0 && len(top) > o.Limit {
		top = top[:o.Limit]
	}
	return top, n
}

// symbolSummary says where names came from, as "bundle 812 frames,
// kallsyms 40, unresolved 3", with a hint when the capture has no bundle.
func symbolSummary(p *analyze.Profile) string {
	var parts []string
	keys := make([]string, 0, len(p.SymbolStats))
	for k := range p.SymbolStats {
		if k != "unresolved" {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range append(keys, "unresolved") {
		if n := p.SymbolStats[k]; n > 0 || k == "unresolved" {
			parts = append(parts, fmt.Sprintf("%s %d", k, n))
		}
	}
	s := "symbols (frames): " + strings.Join(parts, ", ")
	if p.Bundle == nil {
		s += "\n  no __symbols__ bundle: nsprof record bundles symbols unless --no-decode"
	}
	return s
}

func seconds3(ns int64) string { return fmt.Sprintf("%.3fs", float64(ns)/1e9) }

func writeReportText(w io.Writer, p *analyze.Profile, o reportOptions, samples []analyze.Sample, groups []analyze.Group) error {
	fmt.Fprintf(w, "%s: %s, %d samples, %d processes", textsafe.Escape(o.Input), seconds3(p.Duration()), len(p.Samples), len(p.Processes))
	if p.HasLost {
		fmt.Fprintf(w, ", %d lost samples", p.Lost)
	}
	fmt.Fprintf(w, "\n%s\n", symbolSummary(p))
	if shaped(o.View) {
		fmt.Fprintf(w, "selected %d of %d samples\n", len(samples), len(p.Samples))
	}
	if len(samples) == 0 {
		_, err := fmt.Fprintln(w, "no samples")
		return err
	}
	for i, g := range groups {
		if o.By != analyze.GroupNone {
			if i > 0 {
				fmt.Fprintln(w)
			}
			fmt.Fprintf(w, "== %s, %d samples (%.1f%%) ==\n", textsafe.Name(groupTitle(o.By, g), o.Width), len(g.Samples), percent(len(g.Samples), len(samples)))
		}
		if o.Tree || o.BottomUp {
			writeTreeText(w, o, o.tree(p, g.Samples))
		} else {
			top, n := o.top(p, g.Samples)
			writeTopText(w, o, top, n)
		}
	}
	return nil
}

func percent(n, of int) float64 {
	if of == 0 {
		return 0
	}
	return 100 * float64(n) / float64(of)
}

// groupTitle describes a group: pid, comm, container label and ns pid.
func groupTitle(by analyze.GroupBy, g analyze.Group) string {
	var b strings.Builder
	switch by {
	case analyze.GroupContainer:
		return "container " + g.Key
	case analyze.GroupThread:
		fmt.Fprintf(&b, "thread %s", g.Key)
		if g.Thread != nil && g.Thread.NSTID != 0 {
			fmt.Fprintf(&b, " (ns tid %d)", g.Thread.NSTID)
		}
		if g.Process != nil {
			fmt.Fprintf(&b, " of pid %d", g.Process.PID)
		}
	default:
		fmt.Fprintf(&b, "pid %s", g.Key)
	}
	if pr := g.Process; pr != nil {
		if pr.Comm != "" {
			fmt.Fprintf(&b, " %s", pr.Comm)
		}
		if pr.NSPID != 0 {
			fmt.Fprintf(&b, " (ns pid %d)", pr.NSPID)
		}
	}
	fmt.Fprintf(&b, " [%s]", g.Container)
	return b.String()
}

// warn prints the warnings of loading the capture at input, escaped: they
// may quote what the capture holds.
func warn(stderr io.Writer, input string, warnings []string) {
	for _, w := range warnings {
		fmt.Fprintf(stderr, "nsprof: warning: %s: %s\n", textsafe.Escape(input), textsafe.Escape(w))
	}
}

// truncate cuts s to n runes, ending in "…" when cut; n <= 0 keeps s.
func truncate(s string, n int) string { return textsafe.Cut(s, n) }

func writeTopText(w io.Writer, o reportOptions, top []analyze.FuncStat, all int) {
	const fixed = len(" Self%  Total%  Samples  ")
	// Names are escaped and cut to textsafe.MaxRunes (the terminal's
	// width cuts them further below), so one long name cannot pad every
	// row to its length.
	names, dsos := make([]string, len(top)), make([]string, len(top))
	funcW, dsoW := len("Function"), len("DSO")
	for i, s := range top {
		names[i], dsos[i] = textsafe.Name(s.Name, 0), textsafe.Name(s.DSO, 0)
		funcW = max(funcW, utf8.RuneCountInString(names[i]))
		dsoW = max(dsoW, utf8.RuneCountInString(dsos[i]))
	}
	dsoW = min(dsoW, 24)
	if o.Width > 0 && fixed+funcW+2+dsoW > o.Width {
		funcW = max(12, o.Width-fixed-2-dsoW)
	}
	fmt.Fprintf(w, "%6s %7s %8s  %-*s  %s\n", "Self%", "Total%", "Samples", funcW, "Function", "DSO")
	for i, s := range top {
		fmt.Fprintf(w, "%5.1f%% %6.1f%% %8d  %-*s  %s\n", s.SelfPercent, s.TotalPercent, s.Self,
			funcW, truncate(names[i], funcW), truncate(dsos[i], dsoW))
	}
	if n := all - len(top); n > 0 {
		fmt.Fprintf(w, "… %d more functions (--limit 0 shows all)\n", n)
	}
}

func writeTreeText(w io.Writer, o reportOptions, root *analyze.Node) {
	fmt.Fprintf(w, "%7s %7s  %s\n", "Total%", "Self%", "Function [DSO]")
	n := float64(max(1, root.Total))
	root.Walk(func(nd *analyze.Node, depth int) bool {
		if depth == 0 {
			return true
		}
		line := fmt.Sprintf("%6.1f%% %6.1f%%  %s%s [%s]", 100*float64(nd.Total)/n, 100*float64(nd.Self)/n,
			strings.Repeat("  ", depth-1), textsafe.Name(nd.Name, 0), textsafe.Name(nd.DSO, 0))
		fmt.Fprintln(w, truncate(line, o.Width))
		return true
	})
}

// Report JSON document; see the command's help for the schema.
type (
	jsonReport struct {
		Schema   string      `json:"schema"`
		Capture  jsonCapture `json:"capture"`
		Selected int         `json:"selected"`
		View     string      `json:"view"`
		GroupBy  string      `json:"group_by"`
		Groups   []jsonGroup `json:"groups"`
	}
	jsonCapture struct {
		File        string         `json:"file"`
		CaptureTime string         `json:"capture_time"`
		Duration    float64        `json:"duration_seconds"`
		Samples     int            `json:"samples"`
		Processes   int            `json:"processes"`
		Lost        *int64         `json:"lost_samples,omitempty"`
		Symbols     map[string]int `json:"symbols"`
		Warnings    []string       `json:"warnings,omitempty"`
		Damage      string         `json:"damage,omitempty"`
	}
	jsonGroup struct {
		Key       string             `json:"key"`
		PID       int32              `json:"pid,omitempty"`
		TID       int32              `json:"tid,omitempty"`
		Comm      string             `json:"comm,omitempty"`
		Cmdline   string             `json:"cmdline,omitempty"`
		NSPID     int32              `json:"nspid,omitempty"`
		Container string             `json:"container,omitempty"`
		Samples   int                `json:"samples"`
		Functions []analyze.FuncStat `json:"functions,omitempty"`
		Tree      *analyze.Node      `json:"tree,omitempty"`
	}
)

func writeReportJSON(w io.Writer, p *analyze.Profile, o reportOptions, samples []analyze.Sample, groups []analyze.Group, loadErr error) error {
	doc := jsonReport{
		Schema: reportSchema,
		Capture: jsonCapture{
			File: o.Input, CaptureTime: p.Header.CaptureTime, Duration: float64(p.Duration()) / 1e9,
			Samples: len(p.Samples), Processes: len(p.Processes), Symbols: p.SymbolStats, Warnings: p.Warnings,
		},
		Selected: len(samples),
		View:     o.view(),
		GroupBy:  o.By.String(),
		Groups:   []jsonGroup{},
	}
	if p.HasLost {
		doc.Capture.Lost = &p.Lost
	}
	if loadErr != nil {
		doc.Capture.Damage = loadErr.Error()
	}
	for _, g := range groups {
		jg := jsonGroup{Key: g.Key, Samples: len(g.Samples)}
		if o.By != analyze.GroupNone {
			jg.Container = g.Container
		}
		if pr := g.Process; pr != nil {
			jg.PID, jg.Comm, jg.Cmdline, jg.NSPID = pr.PID, pr.Comm, pr.Cmdline, pr.NSPID
		}
		if g.Thread != nil {
			jg.TID = g.Thread.TID
		}
		if o.Tree || o.BottomUp {
			jg.Tree = o.tree(p, g.Samples)
		} else {
			jg.Functions, _ = o.top(p, g.Samples)
		}
		doc.Groups = append(doc.Groups, jg)
	}
	enc := json.NewEncoder(textsafe.JSONWriter(w))
	enc.SetIndent("", "  ")
	return enc.Encode(doc)
}
