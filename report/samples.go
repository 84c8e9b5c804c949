package report

import (
	"fmt"
	"io"
	"path"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"nsprof/analyze"
	"nsprof/internal/textsafe"
)

// samplesText writes the sample views as text: a header on the capture,
// then the table or tree of each group.
func samplesText(w io.Writer, v *analyze.View, o Options) error {
	p, samples := v.Profile, v.Samples
	fmt.Fprintf(w, "%s: %s, %s", textsafe.Escape(o.File), seconds3(p.Duration()), countsText(stackSamples(p), p.SampledProcesses(), len(p.Processes)))
	if p.HasLost {
		fmt.Fprintf(w, ", %d lost samples", p.Lost)
	}
	fmt.Fprintf(w, "\n%s\n", symbolSummary(p))
	vi := p.Selected()
	if vi != 0 {
		vt := p.SampleTypes[vi]
		fmt.Fprintf(w, "value %s (%s): %d of %d, in %d samples\n", vt.Type, vt.Unit, p.Weight(samples), p.Totals[vi], len(samples))
	} else if Shaped(o.Select) {
		fmt.Fprintf(w, "selected %d of %d samples\n", len(samples), stackSamples(p))
	}
	if len(samples) == 0 {
		if why := NoneSelected(p, o.Select.Filter); why != "" {
			_, err := fmt.Fprintf(w, "no samples: %s\n", why)
			return err
		}
		_, err := fmt.Fprintln(w, "no samples")
		return err
	}
	total := p.Weight(samples)
	for i, g := range p.Group(samples, o.By) {
		if o.By != analyze.GroupNone {
			if i > 0 {
				fmt.Fprintln(w)
			}
			if vi != 0 {
				fmt.Fprintf(w, "== %s, %d %s (%.1f%%) in %d samples ==\n", textsafe.Name(groupTitle(o.By, g), o.Width), g.Weight, p.SampleTypes[vi].Unit, percent(g.Weight, total), len(g.Samples))
			} else {
				fmt.Fprintf(w, "== %s, %d samples (%.1f%%) ==\n", textsafe.Name(groupTitle(o.By, g), o.Width), len(g.Samples), percent(g.Weight, total))
			}
		}
		if o.View == ViewTree || o.View == ViewBottomUp {
			treeText(w, o, o.tree(p, g.Samples))
		} else {
			top, n := o.top(p, g.Samples)
			topText(w, o, top, n, valueColumn(p))
		}
	}
	return nil
}

// NoneSelected says why f selects no sample of p when the reason is a
// name that is not in the capture: a container none of its processes ran
// in (naming those they ran in: podman users mistype names), or processes
// or threads it does not hold; "" otherwise.
func NoneSelected(p *analyze.Profile, f analyze.Filter) string {
	if c := f.Container; c != "" && !slices.ContainsFunc(p.Processes, func(pr *analyze.Process) bool { return pr.Container.Match(c) }) {
		return fmt.Sprintf("no process ran in a container matching %q; the capture's: %s", textsafe.Escape(c), textsafe.Escape(strings.Join(p.ContainerLabels(), ", ")))
	}
	if len(f.PIDs) > 0 && !slices.ContainsFunc(f.PIDs, func(pid int32) bool { return p.Process(pid) != nil }) {
		return fmt.Sprintf("the capture has no process %s", joinIDs(f.PIDs))
	}
	if len(f.TIDs) > 0 && !slices.ContainsFunc(f.TIDs, func(tid int32) bool { return p.Thread(tid) != nil }) {
		return fmt.Sprintf("the capture has no thread %s", joinIDs(f.TIDs))
	}
	return ""
}

// joinIDs writes ids as "1, 2 or 3".
func joinIDs(ids []int32) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = strconv.Itoa(int(id))
	}
	if len(s) == 1 {
		return s[0]
	}
	return strings.Join(s[:len(s)-1], ", ") + " or " + s[len(s)-1]
}

func (o *Options) tree(p *analyze.Profile, samples []analyze.Sample) *analyze.Node {
	return p.Tree(samples, analyze.TreeOptions{BottomUp: o.View == ViewBottomUp, MaxDepth: o.Depth, MinPercent: o.MinPercent})
}

// top returns the function table's rows and how many functions (or
// source lines, with o.Lines) there are in all.
func (o *Options) top(p *analyze.Profile, samples []analyze.Sample) ([]analyze.FuncStat, int) {
	topN := p.TopN
	if o.Lines {
		topN = p.TopLines
	}
	if !o.SortTotal {
		return topN(samples, o.Limit)
	}
	top, _ := topN(samples, 0)
	analyze.SortByTotal(top)
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

// stackSamples returns the number of stack samples (SAMPLE frames) of p.
func stackSamples(p *analyze.Profile) int64 {
	if len(p.Totals) == 0 {
		return int64(len(p.Samples))
	}
	return p.Totals[0]
}

// valueColumn names the function table's value column: "Samples", or the
// selected sample type.
func valueColumn(p *analyze.Profile) string {
	if vi := p.Selected(); vi != 0 {
		return p.SampleTypes[vi].Type
	}
	return "Samples"
}

func percent(n, of int64) float64 {
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
	case analyze.GroupState:
		return g.Key
	case analyze.GroupDSO:
		return "dso " + g.Key
	case analyze.GroupComm:
		// The processes of a comm group are many: its key is the comm
		// (of the program a process ran then, for one that exec'd).
		return fmt.Sprintf("comm %s [%s]", g.Key, g.Container)
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

// maxPad is the widest the function column of a text table is padded
// to when no terminal width applies; longer names run past it.
const maxPad = 60

func topText(w io.Writer, o Options, top []analyze.FuncStat, all int, column string) {
	valW := max(8, len(column))
	for _, s := range top {
		valW = max(valW, len(strconv.Itoa(s.Self)))
	}
	fixed := len(" Self%  Total%  ") + valW + 2
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
	// With o.Lines, each row's source line, by the file's base name as
	// perf report's srcline has it (the JSON document has the path),
	// between the function and the DSO.
	var srcs []string
	srcW := 0
	if o.Lines {
		srcs = make([]string, len(top))
		srcW = len("Source")
		for i, s := range top {
			srcs[i] = sourceLine(s.File, s.Line)
			srcW = max(srcW, utf8.RuneCountInString(srcs[i]))
		}
		srcW = min(srcW, 40)
		fixed += srcW + 2
	}
	cut := o.Width > 0
	if cut && fixed+funcW+2+dsoW > o.Width {
		funcW = max(12, o.Width-fixed-2-dsoW)
	}
	if !cut {
		// Without a terminal to fit, names are printed whole, but the
		// column is padded only so far: one long C++ name padded every
		// row of a large report to hundreds of spaces (3.4 MB of text
		// for 6,000 functions, a tenth of the report's time).
		funcW = min(funcW, maxPad)
	}
	if o.Lines {
		fmt.Fprintf(w, "%6s %7s %*s  %-*s  %-*s  %s\n", "Self%", "Total%", valW, column, funcW, "Function", srcW, "Source", "DSO")
	} else {
		fmt.Fprintf(w, "%6s %7s %*s  %-*s  %s\n", "Self%", "Total%", valW, column, funcW, "Function", "DSO")
	}
	var line, num []byte
	num = make([]byte, 0, 32)
	for i, s := range top {
		name := names[i]
		if cut {
			name = textsafe.Cut(name, funcW)
		}
		// As "%5.1f%% %6.1f%% %*d  " formats them, without fmt's
		// reflection: a tenth of a large report's printing.
		line = appendPadded(line[:0], strconv.AppendFloat(num[:0], s.SelfPercent, 'f', 1, 64), 5)
		line = append(line, "% "...)
		line = appendPadded(line, strconv.AppendFloat(num[:0], s.TotalPercent, 'f', 1, 64), 6)
		line = append(line, "% "...)
		line = appendPadded(line, strconv.AppendInt(num[:0], int64(s.Self), 10), valW)
		line = append(line, "  "...)
		line = append(line, name...)
		for n := utf8.RuneCountInString(name); n < funcW; n++ {
			line = append(line, ' ')
		}
		line = append(line, "  "...)
		if srcs != nil {
			src := textsafe.Cut(srcs[i], srcW)
			line = append(line, src...)
			for n := utf8.RuneCountInString(src); n < srcW; n++ {
				line = append(line, ' ')
			}
			line = append(line, "  "...)
		}
		line = append(line, textsafe.Cut(dsos[i], dsoW)...)
		line = append(line, '\n')
		w.Write(line)
	}
	if n := all - len(top); n > 0 {
		what := "functions"
		if o.Lines {
			what = "lines"
		}
		fmt.Fprintf(w, "… %d more %s (--limit 0 shows all)\n", n, what)
	}
}

// appendPadded appends s to line right-aligned in a field of width bytes.
func appendPadded(line, s []byte, width int) []byte {
	for n := len(s); n < width; n++ {
		line = append(line, ' ')
	}
	return append(line, s...)
}

func treeText(w io.Writer, o Options, root *analyze.Node) {
	fmt.Fprintf(w, "%7s %7s  %s\n", "Total%", "Self%", "Function [DSO]")
	n := float64(max(1, root.Total))
	root.Walk(func(nd *analyze.Node, depth int) bool {
		if depth == 0 {
			return true
		}
		line := fmt.Sprintf("%6.1f%% %6.1f%%  %s%s [%s]", 100*float64(nd.Total)/n, 100*float64(nd.Self)/n,
			strings.Repeat("  ", depth-1), textsafe.Name(nd.Name, 0), textsafe.Name(nd.DSO, 0))
		fmt.Fprintln(w, textsafe.Cut(line, o.Width))
		return true
	})
}

// sourceLine is a row's source line as the text table shows it: the
// file's base name and the line, "?" when the recording gave none.
func sourceLine(file string, line int) string {
	if file == "" {
		return "?"
	}
	if line <= 0 {
		return textsafe.Name(path.Base(file), 0)
	}
	return textsafe.Name(path.Base(file), 0) + ":" + strconv.Itoa(line)
}
