package report

import (
	"fmt"
	"io"
	"strconv"
	"unicode/utf8"

	"nsprof/analyze"
	"nsprof/internal/textsafe"
)

// diffTop returns the function differences of view v against base, the
// first o.Limit of them (all without a limit), and how many there are.
func diffTop(v, base *analyze.View, o Options) ([]analyze.FuncDiff, int) {
	d := analyze.DiffTop(base.Profile.Top(base.Samples), v.Profile.Top(v.Samples), o.SortTotal)
	n := len(d)
	if o.Limit > 0 && len(d) > o.Limit {
		d = d[:o.Limit]
	}
	return d, n
}

// diffText writes the top view of v compared with base: each function's
// self and total shares in both, the largest change first, as perf diff
// lists them (the delta in percentage points).
func diffText(w io.Writer, v, base *analyze.View, o Options) error {
	for _, c := range []struct {
		what string
		v    *analyze.View
	}{{textsafe.Escape(o.File), v}, {"base " + textsafe.Escape(o.BaseFile), base}} {
		p := c.v.Profile
		fmt.Fprintf(w, "%s: %s, %s; ", c.what, seconds3(p.Duration()), countsText(stackSamples(p), p.SampledProcesses(), len(p.Processes)))
		if vi := p.Selected(); vi != 0 {
			fmt.Fprintf(w, "value %s (%s) %d selected\n", p.SampleTypes[vi].Type, p.SampleTypes[vi].Unit, p.Weight(c.v.Samples))
		} else {
			fmt.Fprintf(w, "%d samples selected\n", len(c.v.Samples))
		}
	}
	diffs, all := diffTop(v, base, o)
	if len(diffs) == 0 {
		_, err := fmt.Fprintln(w, "no samples")
		return err
	}
	names, dsos := make([]string, len(diffs)), make([]string, len(diffs))
	funcW := len("Function")
	for i, d := range diffs {
		names[i], dsos[i] = textsafe.Name(d.Name, 0), textsafe.Name(d.DSO, 0)
		funcW = max(funcW, utf8.RuneCountInString(names[i]))
	}
	const fixed = 6*8 + 2
	cut := o.Width > 0
	if cut && fixed+funcW+2+24 > o.Width {
		funcW = max(12, o.Width-fixed-2-24)
	}
	if !cut {
		funcW = min(funcW, maxPad)
	}
	if o.SortTotal {
		fmt.Fprintln(w, "the largest change of total share first")
	}
	fmt.Fprintf(w, "%7s %7s %7s %7s %7s %7s  %-*s  %s\n", "Base%", "Self%", "Delta", "Base%", "Total%", "Delta", funcW, "Function", "DSO")
	pct := func(b []byte, x float64) []byte {
		return append(appendPadded(b, strconv.AppendFloat(nil, x, 'f', 1, 64), 6), "% "...)
	}
	delta := func(b []byte, x float64) []byte {
		d := strconv.AppendFloat(nil, x, 'f', 1, 64)
		switch string(d) {
		case "-0.0":
			d = d[1:]
		case "0.0":
		default:
			if x > 0 {
				d = append([]byte{'+'}, d...)
			}
		}
		return append(appendPadded(b, d, 7), ' ')
	}
	var line []byte
	for i, d := range diffs {
		name := names[i]
		if cut {
			name = textsafe.Cut(name, funcW)
		}
		line = pct(line[:0], d.BaseSelfPercent)
		line = pct(line, d.SelfPercent)
		line = delta(line, d.SelfDelta)
		line = pct(line, d.BaseTotalPercent)
		line = pct(line, d.TotalPercent)
		line = delta(line, d.TotalDelta)
		line = append(line, ' ')
		line = append(line, name...)
		for n := utf8.RuneCountInString(name); n < funcW; n++ {
			line = append(line, ' ')
		}
		line = append(line, "  "...)
		line = append(line, textsafe.Cut(dsos[i], 24)...)
		line = append(line, '\n')
		w.Write(line)
	}
	if n := all - len(diffs); n > 0 {
		fmt.Fprintf(w, "... %d more functions (--limit 0 shows all)\n", n)
	}
	return nil
}

// diffJSON writes the top view of v compared with base as one document
// of schema [Schema]: the capture, the base capture ("base") and the
// function differences ("diff").
func diffJSON(w io.Writer, v, base *analyze.View, o Options) error {
	doc := newJSONReport(v, o)
	doc.Base, doc.BaseSelected = new(captureDoc(o.BaseFile, base.Profile)), len(base.Samples)
	doc.Diff, _ = diffTop(v, base, o)
	if doc.Diff == nil {
		doc.Diff = []analyze.FuncDiff{}
	}
	return encodeJSON(w, doc)
}
