package main

import (
	"fmt"
	"io"
	"strings"

	"nsprof/analyze"
	"nsprof/internal/textsafe"
)

// writeMemoryReport prints `nsprof report --memory`: totals, peak live
// heap, top functions by bytes and by count, the allocation call tree,
// leaks and temporary allocations by stack.
func writeMemoryReport(w io.Writer, p *analyze.Profile, opts reportOptions) error {
	var pids []int32
	if len(opts.View.Filter.PIDs) > 0 {
		pids = opts.View.Filter.PIDs
	}
	m, err := analyze.LoadMemory(opts.Input, p, analyze.MemoryOptions{PIDs: pids, Inline: opts.View.Inline})
	if m == nil {
		return err
	}
	if err != nil {
		fmt.Fprintf(w, "warning: %s; reporting the allocations before the damage\n", textsafe.Escape(err.Error()))
	}
	if m.Allocs == 0 && m.Frees == 0 {
		fmt.Fprintf(w, "%s has no allocations (record with nsprof record --memprof)\n", opts.Input)
		return nil
	}
	est := ""
	if m.SampleBytes > 0 {
		est = fmt.Sprintf(" (sampled every %s: byte and object totals are estimates)", fmtBytes(m.SampleBytes))
	}
	fmt.Fprintf(w, "Memory: %d allocations and %d frees recorded%s\n", m.Allocs, m.Frees, est)
	fmt.Fprintf(w, "  allocated  %s in %s objects\n", fmtBytes(m.Bytes), fmtObjects(m.Objects))
	fmt.Fprintf(w, "  peak live  %s at +%.3fs\n", fmtBytes(m.Peak), float64(m.PeakTime-m.Start)/1e9)
	fmt.Fprintf(w, "  leaked     %s in %s objects (allocated while recording, never freed)\n", fmtBytes(m.LeakBytes), fmtObjects(m.LeakObjects))
	fmt.Fprintf(w, "  temporary  %s in %s objects (freed before the thread's next allocation)\n", fmtBytes(m.TempBytes), fmtObjects(m.TempObjects))
	if m.HasLost {
		fmt.Fprintf(w, "  lost       %s\n", memLost(m.Lost, m.SignalDropped))
	}

	limit := opts.Limit
	top := m.Top()
	rows := func(n int) int {
		if limit > 0 && limit < n {
			return limit
		}
		return n
	}
	fmt.Fprintf(w, "\nTop functions by bytes (self: called the allocator; total: anywhere on the stack)\n")
	fmt.Fprintf(w, "%14s %12s %14s %12s  %s\n", "SELF BYTES", "SELF CALLS", "TOTAL BYTES", "TOTAL CALLS", "FUNCTION")
	for _, f := range top[:rows(len(top))] {
		fmt.Fprintf(w, "%14d %12s %14d %12s  %s\n", f.SelfBytes, fmtObjects(f.SelfObjects), f.TotalBytes, fmtObjects(f.TotalObjects), funcLabel(f.Function, f.DSO))
	}
	byCount := append([]analyze.MemFunc(nil), top...)
	sortMemFuncsByCount(byCount)
	fmt.Fprintf(w, "\nTop functions by allocation count\n")
	fmt.Fprintf(w, "%12s %14s %12s  %s\n", "SELF CALLS", "SELF BYTES", "TOTAL CALLS", "FUNCTION")
	for _, f := range byCount[:rows(len(byCount))] {
		if f.SelfObjects == 0 {
			break
		}
		fmt.Fprintf(w, "%12s %14d %12s  %s\n", fmtObjects(f.SelfObjects), f.SelfBytes, fmtObjects(f.TotalObjects), funcLabel(f.Function, f.DSO))
	}

	fmt.Fprintf(w, "\nCall tree by bytes allocated\n")
	tree := m.Tree()
	minBytes := int64(float64(tree.Bytes) * opts.MinPercent / 100)
	var walk func(n *analyze.MemNode, depth int)
	walk = func(n *analyze.MemNode, depth int) {
		for _, c := range n.Children {
			if c.Bytes < minBytes {
				continue
			}
			pct := 100 * float64(c.Bytes) / float64(max(1, tree.Bytes))
			fmt.Fprintf(w, "%14d %6.2f%% %10s  %s%s\n", c.Bytes, pct, fmtObjects(c.Objects), strings.Repeat("  ", depth), funcLabel(c.Loc.Function, c.Loc.DSO))
			if opts.Depth == 0 || depth+1 < opts.Depth {
				walk(c, depth+1)
			}
		}
	}
	walk(tree, 0)

	stacks := func(title string, list []*analyze.MemStack, bytes func(*analyze.MemStack) (int64, float64)) {
		fmt.Fprintf(w, "\n%s\n", title)
		if len(list) == 0 {
			fmt.Fprintf(w, "  none\n")
		}
		for _, s := range list[:rows(len(list))] {
			b, o := bytes(s)
			fmt.Fprintf(w, "  %d bytes in %s objects, pid %d\n", b, fmtObjects(o), s.PID)
			for _, l := range s.Frames {
				fmt.Fprintf(w, "      %s\n", funcLabel(l.Function, l.DSO))
			}
		}
	}
	stacks("Leaks by stack (live at the end)", m.Leaks(), func(s *analyze.MemStack) (int64, float64) { return s.LeakBytes, s.LeakObjects })
	stacks("Temporary allocations by stack", m.Temporaries(), func(s *analyze.MemStack) (int64, float64) { return s.TempBytes, s.TempObjects })
	return nil
}

// memLost says how many allocation events a recording could not record:
// in total, with the ring full, and in signal handlers with no room.
func memLost(rings, signals int64) string {
	return fmt.Sprintf("%d events not recorded (%d with the ring full, %d in signal handlers with no room)", rings+signals, rings, signals)
}

// memorySelectionError says which selection flags a heap profile cannot
// honour, or "": allocations are selected by process only (--pid), and
// grouped by process only.
func memorySelectionError(v analyze.ViewOptions, by analyze.GroupBy) string {
	f := v.Filter
	var bad []string
	for _, c := range []struct {
		set  bool
		flag string
	}{
		{len(f.TIDs) > 0, "--tid"}, {f.Comm != "", "--comm"}, {f.Container != "", "--container"},
		{f.DSO != "", "--dso"}, {f.Since != 0, "--since"}, {f.Until != 0, "--until"},
		{v.HideKernel, "--hide-kernel"}, {v.Focus != "", "--focus"}, {v.FocusDSO != "", "--focus-dso"},
		{by != analyze.GroupNone && by != analyze.GroupProcess, "--by " + by.String()},
	} {
		if c.set {
			bad = append(bad, c.flag)
		}
	}
	if len(bad) == 0 {
		return ""
	}
	return "--memory selects allocations with --pid only (and groups by process only), not " + strings.Join(bad, ", ")
}

func sortMemFuncsByCount(fs []analyze.MemFunc) {
	for i := 1; i < len(fs); i++ {
		for j := i; j > 0 && fs[j].SelfObjects > fs[j-1].SelfObjects; j-- {
			fs[j], fs[j-1] = fs[j-1], fs[j]
		}
	}
}

func funcLabel(fn, dso string) string {
	if dso == "" {
		return textsafe.Name(fn, 0)
	}
	return textsafe.Name(fn, 0) + " (" + textsafe.Name(dso, 0) + ")"
}

// fmtObjects prints a count, rounded when it is an estimate.
func fmtObjects(v float64) string { return fmt.Sprintf("%.0f", v) }

// fmtBytes prints bytes with a binary unit.
func fmtBytes(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.2f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.2f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.2f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
