package report

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strings"

	"nsprof/analyze"
	"nsprof/internal/textsafe"
)

// memoryText prints the memory view of the allocations v selects:
// totals, peak live heap, top functions by bytes and by count, the
// allocation call tree, leaks and temporary allocations by stack. Every
// figure is a sum of the profile's allocation columns over v's samples,
// so the view agrees with the sample views and exports of the same
// selection weighing alloc_space, alloc_objects, inuse_* or temp_*.
func memoryText(w io.Writer, v *analyze.View, o Options) error {
	if o.Damage != nil {
		fmt.Fprintf(w, "warning: %s; reporting the allocations before the damage\n", textsafe.Escape(o.Damage.Error()))
	}
	if !v.HasAllocations() {
		_, err := fmt.Fprintf(w, "%s has no allocations (record with nsprof record --memprof)\n", textsafe.Escape(o.File))
		return err
	}
	cols, err := memColumns(v)
	if err != nil {
		return err
	}
	// The heap's replay (a fifth of the report of a capture of millions
	// of allocations: every event in time order) runs beside the
	// tables, trees and stacks, which only read the same view.
	heap := make(chan analyze.HeapStats, 1)
	go func() { heap <- v.Heap() }()
	top := memTop(cols)
	to := analyze.TreeOptions{MaxDepth: o.Depth, MinPercent: o.MinPercent}
	bytesTree := cols.space.CallTree(v.Samples, to)
	objectsTree := cols.objects.CallTree(v.Samples, analyze.TreeOptions{}) // whole: bytes decide what is shown
	leaks := memStacks(v, cols.inuseSpace, cols.inuseObjects)
	temps := memStacks(v, cols.tempSpace, cols.tempObjects)
	h := <-heap
	est := ""
	if h.SampleBytes > 0 {
		est = fmt.Sprintf(" (sampled every %s: byte and object totals are estimates)", fmtBytes(h.SampleBytes))
	}
	fmt.Fprintf(w, "Memory: %d allocations and %d frees recorded%s\n", h.Allocs, h.Frees, est)
	if Shaped(o.Select) {
		fmt.Fprintf(w, "  selected   %d allocations (frees: of the selected processes, threads and time)\n", h.Allocs)
	}
	fmt.Fprintf(w, "  allocated  %s in %d objects\n", fmtBytes(h.Bytes), h.Objects)
	fmt.Fprintf(w, "  peak live  %s at +%.3fs\n", fmtBytes(h.Peak), float64(h.PeakTime-v.Start)/1e9)
	fmt.Fprintf(w, "  leaked     %s in %d objects (allocated while recording, never freed)\n", fmtBytes(h.LeakBytes), h.LeakObjects)
	fmt.Fprintf(w, "  temporary  %s in %d objects (freed before the thread's next allocation)\n", fmtBytes(h.TempBytes), h.TempObjects)
	if h.HasLost {
		fmt.Fprintf(w, "  lost       %s\n", memLost(h.Lost, h.SignalDropped))
	}
	rows := func(n int) int {
		if o.Limit > 0 && o.Limit < n {
			return o.Limit
		}
		return n
	}

	fmt.Fprintf(w, "\nTop functions by bytes (self: called the allocator; total: anywhere on the stack)\n")
	fmt.Fprintf(w, "%14s %12s %14s %12s  %s\n", "SELF BYTES", "SELF CALLS", "TOTAL BYTES", "TOTAL CALLS", "FUNCTION")
	for _, f := range top[:rows(len(top))] {
		fmt.Fprintf(w, "%14d %12d %14d %12d  %s\n", f.bytes.Self, f.objects.Self, f.bytes.Total, f.objects.Total, funcLabel(f.bytes.Name, f.bytes.DSO))
	}
	slices.SortStableFunc(top, func(a, b memFunc) int { return cmp.Compare(b.objects.Self, a.objects.Self) })
	fmt.Fprintf(w, "\nTop functions by allocation count\n")
	fmt.Fprintf(w, "%12s %14s %12s  %s\n", "SELF CALLS", "SELF BYTES", "TOTAL CALLS", "FUNCTION")
	for _, f := range top[:rows(len(top))] {
		if f.objects.Self == 0 {
			break
		}
		fmt.Fprintf(w, "%12d %14d %12d  %s\n", f.objects.Self, f.bytes.Self, f.objects.Total, funcLabel(f.bytes.Name, f.bytes.DSO))
	}

	fmt.Fprintf(w, "\nCall tree by bytes allocated\n")
	var walk func(b, n *analyze.Node, depth int)
	walk = func(b, n *analyze.Node, depth int) {
		for _, c := range b.Children {
			var objects int
			cn := childOf(n, c.Func)
			if cn != nil {
				objects = cn.Total
			}
			pct := 100 * float64(c.Total) / float64(max(1, bytesTree.Total))
			fmt.Fprintf(w, "%14d %6.2f%% %10d  %s%s\n", c.Total, pct, objects, strings.Repeat("  ", depth), funcLabel(c.Name, c.DSO))
			walk(c, cn, depth+1)
		}
	}
	walk(bytesTree, objectsTree, 0)

	stacks := func(title string, list []memStack) {
		fmt.Fprintf(w, "\n%s\n", title)
		if len(list) == 0 {
			fmt.Fprintf(w, "  none\n")
		}
		for _, s := range list[:rows(len(list))] {
			fmt.Fprintf(w, "  %d bytes in %d objects, pid %d\n", s.bytes, s.objects, s.pid)
			for _, fr := range v.Stack(s.id) {
				fn := &v.Funcs[v.Frames[fr].Func]
				fmt.Fprintf(w, "      %s\n", funcLabel(fn.Name, fn.DSO))
			}
		}
	}
	stacks("Leaks by stack (live at the end)", leaks)
	stacks("Temporary allocations by stack", temps)
	return nil
}

// memViews are the view weighing each allocation column in turn.
type memViews struct {
	space, objects, inuseSpace, inuseObjects, tempSpace, tempObjects *analyze.View
}

// memColumns returns v weighing each allocation column.
func memColumns(v *analyze.View) (memViews, error) {
	var m memViews
	for _, c := range []struct {
		t  analyze.ValueType
		to **analyze.View
	}{
		{analyze.AllocSpaceType, &m.space}, {analyze.AllocObjectsType, &m.objects},
		{analyze.InuseSpaceType, &m.inuseSpace}, {analyze.InuseObjectsType, &m.inuseObjects},
		{analyze.TempSpaceType, &m.tempSpace}, {analyze.TempObjectsType, &m.tempObjects},
	} {
		i, err := v.ValueIndex(c.t.Type)
		if err != nil {
			return m, fmt.Errorf("report memory: %w", err)
		}
		if *c.to, err = v.WeighBy(i); err != nil {
			return m, fmt.Errorf("report memory: %w (the view must weigh an allocation type)", err)
		}
	}
	return m, nil
}

// memFunc is one function's row of the memory view: its bytes and its
// objects.
type memFunc struct{ bytes, objects analyze.FuncStat }

// memTop returns the functions by bytes (self, then total), each with its
// objects; those that allocated only blocks of 0 bytes (malloc(0)) last.
func memTop(cols memViews) []memFunc {
	objects := cols.objects.Top(cols.objects.Samples)
	byFunc := make(map[analyze.FuncID]analyze.FuncStat, len(objects))
	for _, f := range objects {
		byFunc[f.Func] = f
	}
	var out []memFunc
	for _, f := range cols.space.Top(cols.space.Samples) {
		out = append(out, memFunc{f, byFunc[f.Func]})
		delete(byFunc, f.Func)
	}
	for _, f := range objects {
		if _, ok := byFunc[f.Func]; ok {
			out = append(out, memFunc{analyze.FuncStat{Func: f.Func, Name: f.Name, DSO: f.DSO, Kernel: f.Kernel}, f})
		}
	}
	return out
}

// childOf returns the child of n for function fn, or nil.
func childOf(n *analyze.Node, fn analyze.FuncID) *analyze.Node {
	if n == nil {
		return nil
	}
	for _, c := range n.Children {
		if c.Func == fn {
			return c
		}
	}
	return nil
}

// memStack is one stack of one process with its value in a pair of
// columns.
type memStack struct {
	id             analyze.StackID
	pid            int32
	bytes, objects int64
}

// memStacks returns the stacks with bytes in the bytes column, most
// first, with their objects: a view's stacks are a process's own.
func memStacks(v, bytes, objects *analyze.View) []memStack {
	b, n := bytes.StackCounts(v.Samples), objects.StackCounts(v.Samples)
	pid := make(map[analyze.StackID]int32)
	for i := range v.Samples {
		pid[v.Samples[i].Stack] = v.Samples[i].PID
	}
	var out []memStack
	for id := range b {
		if b[id] > 0 || n[id] > 0 {
			out = append(out, memStack{analyze.StackID(id), pid[analyze.StackID(id)], b[id], n[id]})
		}
	}
	slices.SortStableFunc(out, func(x, y memStack) int { return cmp.Compare(y.bytes, x.bytes) })
	return out
}

// memLost says how many allocation events a recording could not record:
// in total, with the ring full, and in signal handlers with no room.
func memLost(rings, signals int64) string {
	return fmt.Sprintf("%d events not recorded (%d with the ring full, %d in signal handlers with no room)", rings+signals, rings, signals)
}

func funcLabel(fn, dso string) string {
	if dso == "" {
		return textsafe.Name(fn, 0)
	}
	return textsafe.Name(fn, 0) + " (" + textsafe.Name(dso, 0) + ")"
}
