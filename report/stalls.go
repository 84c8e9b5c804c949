package report

import (
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"nsprof/analyze"
	"nsprof/internal/textsafe"
)

// maxStallRows is how many of the longest stalls the marks view lists
// when Options.Limit does not say.
const maxStallRows = 10

// stalls returns the probed calls among the selected marks longer than
// the options' threshold and their counts, with the stacks of v's
// samples within each call when v is not nil.
func stalls(sel selection, v *analyze.View, o Options) ([]analyze.Stall, []analyze.StallStats) {
	st, counts := analyze.Stalls(sel.marks, o.stallThreshold())
	if v != nil && len(st) > 0 {
		v.StallStacks(st)
	}
	return st, counts
}

// stallThreshold returns Options.Stall, or [analyze.DefaultStall].
func (o Options) stallThreshold() int64 {
	if o.Stall > 0 {
		return int64(o.Stall)
	}
	return analyze.DefaultStall
}

// stallsText writes the stall counts per group:name and the longest
// stalls, each with the stack most of its thread's samples within it
// share.
func stallsText(w io.Writer, t *analyze.Timeline, st []analyze.Stall, counts []analyze.StallStats, o Options) {
	if len(counts) == 0 {
		return
	}
	fmt.Fprintf(w, "\nStalls: probed calls over %s\n", fmtDuration(float64(o.stallThreshold())))
	nameW := len("Group:Name")
	names := make([]string, len(counts))
	for i, c := range counts {
		names[i] = textsafe.Escape(c.Group + ":" + c.Name)
		nameW = max(nameW, utf8.RuneCountInString(names[i]))
	}
	nameW = min(nameW, 48)
	fmt.Fprintf(w, "%-*s %7s %7s\n", nameW, "Group:Name", "Calls", "Stalls")
	for i, c := range counts {
		fmt.Fprintln(w, textsafe.Cut(fmt.Sprintf("%-*s %7d %7d", nameW, textsafe.Cut(names[i], nameW), c.Calls, c.Stalls), o.Width))
	}
	if len(st) == 0 {
		return
	}
	rows := maxStallRows
	if o.Limit > 0 {
		rows = o.Limit
	}
	fmt.Fprintf(w, "\nLongest stalls (%d of %d), with the stack most of the thread's samples within share:\n", min(rows, len(st)), len(st))
	fmt.Fprintf(w, "%9s %11s %8s %8s  %s\n", "Time", "Duration", "PID", "TID", "Group:Name")
	for _, s := range st[:min(rows, len(st))] {
		line := fmt.Sprintf("%9s %11s %8d %8d  %s", seconds3(s.Time-t.Start), fmtDuration(float64(s.Duration)), s.PID, s.TID, textsafe.Escape(s.Group+":"+s.Name))
		fmt.Fprintln(w, textsafe.Cut(line, o.Width))
		switch {
		case s.Samples == 0:
			fmt.Fprintln(w, "    no samples of the thread within it")
		case len(s.Stack) > 0:
			names := make([]string, len(s.Stack))
			for i, f := range s.Stack {
				names[i] = textsafe.Escape(f)
			}
			line := fmt.Sprintf("    %d of %d samples: %s", s.StackSamples, s.Samples, strings.Join(names, " > "))
			fmt.Fprintln(w, textsafe.Cut(line, o.Width))
		}
	}
}
