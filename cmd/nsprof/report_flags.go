package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"nsprof/analyze"
	nsreport "nsprof/report"
)

// captureArg returns the capture a command reads: FILE, or -i FILE as
// perf report -i takes it, or def when neither is given (def "" makes one
// of them required).
func captureArg(cmd *cobra.Command, args []string, input, def string) (string, error) {
	switch {
	case input != "" && len(args) > 0:
		return "", usagef(cmd, "give the capture as FILE or with -i, not both")
	case input != "":
		return input, nil
	case len(args) > 0:
		return args[0], nil
	case def == "":
		return "", usagef(cmd, "which capture? give FILE or -i FILE")
	}
	return def, nil
}

// timelineFlag is a flag of a timeline view.
type timelineFlag struct {
	name string
	view nsreport.View
}

// timelineFlags are the flags of report's timeline views, in the order
// they are named in errors, with their views.
var timelineFlags = []timelineFlag{
	{"marks", nsreport.ViewMarks}, {"counters", nsreport.ViewCounters}, {"processes", nsreport.ViewProcesses},
	{"logs", nsreport.ViewLogs}, {"summary", nsreport.ViewSummary},
}

// timelineView returns the one timeline view set in views, or "", and
// rejects combinations with the sample views and with the filters that
// select samples only.
func timelineView(cmd *cobra.Command, views map[string]*bool, opts reportOptions) (string, error) {
	var set []string
	for _, tf := range timelineFlags {
		if *views[tf.name] {
			set = append(set, "--"+tf.name)
		}
	}
	switch {
	case len(set) == 0:
		return "", nil
	case len(set) > 1:
		return "", usagef(cmd, "%s cannot be combined: pick one view", strings.Join(set, " and "))
	case opts.Tree || opts.BottomUp || opts.Memory || opts.Value != "" || opts.Report.By != analyze.GroupNone:
		return "", usagef(cmd, "%s does not combine with --tree, --bottom-up, --memory, --value or --by", set[0])
	}
	v := opts.Report.Select
	f := v.Filter
	if len(f.TIDs) > 0 || f.Comm != "" || f.DSO != "" || v.HideKernel || v.Focus != "" || v.FocusDSO != "" {
		return "", usagef(cmd, "%s selects by --pid, --container, --since and --until only", set[0])
	}
	return strings.TrimPrefix(set[0], "--"), nil
}

// timelineViewOf returns the report view of a timeline flag's name.
func timelineViewOf(name string) nsreport.View {
	i := slices.IndexFunc(timelineFlags, func(tf timelineFlag) bool { return tf.name == name })
	return timelineFlags[i].view
}

// memoryValue returns the sample type --memory weighs by: value (from
// --value) when set, else def (alloc_space, or --memory-value); both
// must be allocation types.
func memoryValue(value, def string) (string, error) {
	var names []string
	for _, t := range analyze.AllocTypes() {
		names = append(names, t.Type)
	}
	want := strings.Join(names, ", ")
	if !analyze.IsAllocType(def) {
		return "", fmt.Errorf("--memory-value: %q is not an allocation type (want %s)", def, want)
	}
	if value == "" {
		return def, nil
	}
	if !analyze.IsAllocType(value) {
		return "", fmt.Errorf("--memory weighs allocations: --value %q is not an allocation type (want %s)", value, want)
	}
	return value, nil
}
