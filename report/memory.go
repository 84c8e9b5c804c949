package report

import (
	"fmt"
	"io"
	"strings"

	"nsprof/analyze"
	"nsprof/internal/textsafe"
)

// memoryText prints the memory view: totals, peak live heap, top
// functions by bytes and by count, the allocation call tree, leaks and
// temporary allocations by stack.
func memoryText(w io.Writer, m *analyze.Memory, o Options) error {
	if o.Damage != nil {
		fmt.Fprintf(w, "warning: %s; reporting the allocations before the damage\n", textsafe.Escape(o.Damage.Error()))
	}
	if m.Allocs == 0 && m.Frees == 0 {
		_, err := fmt.Fprintf(w, "%s has no allocations (record with nsprof record --memprof)\n", textsafe.Escape(o.File))
		return err
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

	top := m.Top()
	rows := func(n int) int {
		if o.Limit > 0 && o.Limit < n {
			return o.Limit
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
	minBytes := int64(float64(tree.Bytes) * o.MinPercent / 100)
	var walk func(n *analyze.MemNode, depth int)
	walk = func(n *analyze.MemNode, depth int) {
		for _, c := range n.Children {
			if c.Bytes < minBytes {
				continue
			}
			pct := 100 * float64(c.Bytes) / float64(max(1, tree.Bytes))
			fmt.Fprintf(w, "%14d %6.2f%% %10s  %s%s\n", c.Bytes, pct, fmtObjects(c.Objects), strings.Repeat("  ", depth), funcLabel(c.Loc.Function, c.Loc.DSO))
			if o.Depth == 0 || depth+1 < o.Depth {
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
			b, n := bytes(s)
			fmt.Fprintf(w, "  %d bytes in %s objects, pid %d\n", b, fmtObjects(n), s.PID)
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
