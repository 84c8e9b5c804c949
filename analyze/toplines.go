package analyze

import "cmp"

// lineKey is a source line of a function: a row of [Profile.TopLines].
type lineKey struct {
	fn   FuncID
	file string
	line int
}

// TopLines returns the source lines of samples, as pprof -lines and
// perf report --sort sym,srcline show them: each function's file:line
// (of its frames' locations: with inlined calls as frames, each call's
// own line, and the line that called it in its caller) with the
// samples taken there (self) and through it (total, once per sample),
// weighed by the selected value and sorted as [Profile.TopN] sorts
// functions, then by file and line. Code the recording gave no line for
// is one row of its function, with File "" and Line 0. It returns the
// first n rows (all when n <= 0) and how many there are.
func (p *Profile) TopLines(samples []Sample, n int) ([]FuncStat, int) {
	counts := p.stackCounts(samples)
	// The frames' lines, numbered: most frames share a location.
	index := make(map[lineKey]int32)
	var keys []lineKey
	lineOf := make([]int32, len(p.Frames))
	last := (*Location)(nil)
	var lastFn FuncID = -1
	var lastID int32
	for i := range p.Frames {
		f := &p.Frames[i]
		if i > 0 && f.Loc == last && f.Func == lastFn {
			lineOf[i] = lastID
			continue
		}
		k := lineKey{fn: f.Func}
		if f.Loc != nil {
			k.file, k.line = f.Loc.File, f.Loc.Line
		}
		id, ok := index[k]
		if !ok {
			id = int32(len(keys))
			index[k] = id
			keys = append(keys, k)
		}
		lineOf[i], last, lastFn, lastID = id, f.Loc, f.Func, id
	}
	self := make([]int, len(keys))
	total := make([]int, len(keys))
	seen := make([]StackID, len(keys)) // stack+1 that last counted the line
	rowTotals(p, counts, lineOf, self, total, seen)
	ids, count := topRows(self, total, n, func(a, b int32) int {
		ka, kb := &keys[a], &keys[b]
		fa, fb := &p.Funcs[ka.fn], &p.Funcs[kb.fn]
		if c := cmp.Compare(fa.Name, fb.Name); c != 0 {
			return c
		}
		if c := cmp.Compare(fa.DSO, fb.DSO); c != 0 {
			return c
		}
		if c := cmp.Compare(ka.file, kb.file); c != 0 {
			return c
		}
		return cmp.Compare(ka.line, kb.line)
	})
	var out []FuncStat
	if len(ids) > 0 {
		out = make([]FuncStat, len(ids))
	}
	w := float64(max(1, p.Weight(samples)))
	for i, id := range ids {
		k := &keys[id]
		fn := &p.Funcs[k.fn]
		out[i] = FuncStat{
			Func: k.fn, Name: fn.Name, DSO: fn.DSO, Kernel: fn.Kernel,
			Self: self[id], Total: total[id],
			SelfPercent: 100 * float64(self[id]) / w, TotalPercent: 100 * float64(total[id]) / w,
			File: k.file, Line: k.line,
		}
	}
	return out, count
}
