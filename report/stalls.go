package report

import (
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"nsprof/analyze"
	"nsprof/capture"
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
// Without the samples (stacks false), the stalls have no stack line.
func stallsText(w io.Writer, t *analyze.Timeline, sel selection, st []analyze.Stall, counts []analyze.StallStats, stacks bool, o Options) {
	if len(counts) == 0 {
		return
	}
	fmt.Fprintf(w, "\nStalls: probed calls over %s\n", fmtDuration(float64(o.stallThreshold())))
	if n := t.Metadata[capture.MetaSpanUnpaired]; n != "" && n != "0" {
		fmt.Fprintf(w, "warning: %s probed calls were not marked (their entry or return was lost, or they ran on when the recording stopped; %s)\n",
			textsafe.Escape(n), capture.MetaSpanUnpaired)
	}
	nameW := len("Group:Name")
	names := make([]string, len(counts))
	for i, c := range counts {
		names[i] = textsafe.Escape(c.Group + ":" + c.Name)
		nameW = max(nameW, utf8.RuneCountInString(names[i]))
	}
	nameW = min(nameW, 48)
	from, to := max(sel.since, t.Start), min(sel.until, t.End)
	fmt.Fprintf(w, "%-*s %7s %7s  %s\n", nameW, "Group:Name", "Calls", "Stalls", "timeline over "+seconds3(to-from)+" (# stall, . calls)")
	for i, c := range counts {
		strip := stallStrip(sel, c.Group, c.Name, from, to, o.stallThreshold())
		fmt.Fprintln(w, textsafe.Cut(fmt.Sprintf("%-*s %7d %7d  |%s|", nameW, textsafe.Cut(names[i], nameW), c.Calls, c.Stalls, strip), o.Width))
	}
	if len(st) == 0 {
		return
	}
	rows := maxStallRows
	if o.Limit > 0 {
		rows = o.Limit
	}
	with := ", with the stack most of the thread's samples within share"
	if !stacks {
		with = ""
	}
	fmt.Fprintf(w, "\nLongest stalls (%d of %d)%s:\n", min(rows, len(st)), len(st), with)
	fmt.Fprintf(w, "%9s %11s %8s %8s  %s\n", "Time", "Duration", "PID", "TID", "Group:Name")
	for _, s := range st[:min(rows, len(st))] {
		line := fmt.Sprintf("%9s %11s %8d %8d  %s", seconds3(s.Time-t.Start), fmtDuration(float64(s.Duration)), s.PID, s.TID, textsafe.Escape(s.Group+":"+s.Name))
		fmt.Fprintln(w, textsafe.Cut(line, o.Width))
		switch {
		case !stacks:
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

// stallStrip draws the calls of group:name between from and to in
// sparkWidth columns: '#' where a stall runs, '.' where only shorter
// calls start, ' ' where none does.
func stallStrip(sel selection, group, name string, from, to, threshold int64) string {
	b := []byte(strings.Repeat(" ", sparkWidth))
	span := max(to-from, 1)
	col := func(t int64) int { return int(min(max((t-from)*sparkWidth/span, 0), sparkWidth-1)) }
	for i := range sel.marks {
		m := &sel.marks[i]
		if m.Group != group || m.Name != name || m.Time >= to || m.End() < from {
			continue
		}
		if m.Duration > threshold {
			for c := col(m.Time); c <= col(m.End()); c++ {
				b[c] = '#'
			}
		} else if b[col(m.Time)] == ' ' {
			b[col(m.Time)] = '.'
		}
	}
	return string(b)
}
