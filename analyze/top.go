package analyze

import (
	"cmp"
	"slices"
)

// FuncStat is one function's share of a set of samples.
type FuncStat struct {
	Func FuncID `json:"-"`
	// Name and DSO name the function.
	Name string `json:"function"`
	DSO  string `json:"dso"`
	// Kernel says the function is kernel code.
	Kernel bool `json:"kernel,omitempty"`
	// Self counts the samples in which the function is the leaf, Total
	// those in which it is anywhere in the stack (once per sample, however
	// often it recurses): their selected value ([Profile.Selected]), the
	// number of samples by default.
	Self  int `json:"self"`
	Total int `json:"total"`
	// SelfPercent and TotalPercent are Self and Total in percent of the
	// samples.
	SelfPercent  float64 `json:"self_percent"`
	TotalPercent float64 `json:"total_percent"`
	// File and Line are the source line of a row of [Profile.TopLines]
	// ("" and 0 where the recording gave none); empty in a function
	// table.
	File string `json:"file,omitempty"`
	Line int    `json:"line,omitempty"`
}

// stackCounts returns the selected value ([Profile.Selected]) summed
// over the samples of each stack: how many samples have it, by default.
func (p *Profile) stackCounts(samples []Sample) []int64 {
	counts := make([]int64, p.NumStacks())
	if p.counted() {
		for i := range samples {
			counts[samples[i].Stack]++
		}
		return counts
	}
	for i := range samples {
		counts[samples[i].Stack] += p.Value(&samples[i], p.value)
	}
	return counts
}

// Top returns the functions of samples sorted by self samples, then total
// samples, then name, weighed by the selected value. Percentages are of
// [Profile.Weight] of samples.
func (p *Profile) Top(samples []Sample) []FuncStat {
	top, _ := p.TopN(samples, 0)
	return top
}

// TopN returns the first n functions of [Profile.Top] (all of them when
// n <= 0) and how many functions there are. A report's table shows a few
// dozen of a large capture's tens of thousands: sorting them all (their
// names compared wherever their counts tie, as most do) was a third of
// Top's time.
func (p *Profile) TopN(samples []Sample, n int) ([]FuncStat, int) {
	counts := p.stackCounts(samples)
	self := make([]int, len(p.Funcs))
	total := make([]int, len(p.Funcs))
	seen := make([]StackID, len(p.Funcs)) // stack+1 that last counted the function
	// The functions of the frames, in 4 bytes a frame rather than 112:
	// the stacks' frames are read in no order.
	funcOf := make([]FuncID, len(p.Frames))
	for i := range p.Frames {
		funcOf[i] = p.Frames[i].Func
	}
	if l := p.lazy; l != nil && l.funcTotals(counts, funcOf, self, total, seen) {
		counts = nil // counted
	}
	if counts != nil {
		rowTotals(p, counts, funcOf, self, total, seen)
	}
	ids, count := topRows(self, total, n, func(a, b int32) int {
		fa, fb := &p.Funcs[a], &p.Funcs[b]
		if c := cmp.Compare(fa.Name, fb.Name); c != 0 {
			return c
		}
		return cmp.Compare(fa.DSO, fb.DSO)
	})
	var out []FuncStat // nil when there is none, as before
	if len(ids) > 0 {
		out = make([]FuncStat, len(ids))
	}
	w := float64(max(1, p.Weight(samples)))
	for i, id := range ids {
		fn := &p.Funcs[id]
		out[i] = FuncStat{
			Func: FuncID(id), Name: fn.Name, DSO: fn.DSO, Kernel: fn.Kernel,
			Self: self[id], Total: total[id],
			SelfPercent: 100 * float64(self[id]) / w, TotalPercent: 100 * float64(total[id]) / w,
		}
	}
	return out, count
}

// rowTotals adds to self and total, by row, the counts of the stacks
// (by stack id): self where the row of the stack's leaf frame is,
// total once per stack for each row its frames have; rowOf gives each
// frame's row, seen (as long as self, zero) is scratch.
func rowTotals[R ~int32](p *Profile, counts []int64, rowOf []R, self, total []int, seen []StackID) {
	for id, c := range counts {
		if c == 0 {
			continue
		}
		st := p.Stack(StackID(id))
		if len(st) == 0 {
			continue
		}
		self[rowOf[st[0]]] += int(c)
		for _, fr := range st {
			r := rowOf[fr]
			if seen[r] != StackID(id)+1 {
				seen[r] = StackID(id) + 1
				total[r] += int(c)
			}
		}
	}
}

// topRows returns the rows with a total, by self then total (both
// largest first), then as tie says, then by number: the first n of them
// (all when n <= 0), and how many there are.
func topRows(self, total []int, n int, tie func(a, b int32) int) ([]int32, int) {
	var ids []int32
	for id, t := range total {
		if t != 0 {
			ids = append(ids, int32(id))
		}
	}
	before := func(a, b int32) int {
		if c := cmp.Compare(self[b], self[a]); c != 0 {
			return c
		}
		if c := cmp.Compare(total[b], total[a]); c != 0 {
			return c
		}
		if c := tie(a, b); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	}
	count := len(ids)
	if n > 0 && n < len(ids) {
		ids = firstN(ids, n, before)
	}
	slices.SortFunc(ids, before)
	return ids, count
}

// firstN returns the n first of ids (0 < n < len(ids)) in the order cmp
// gives, in no order: a heap of the n first seen so far, its root the
// last of them, which most ids are compared with only.
func firstN(ids []int32, n int, cmp func(a, b int32) int) []int32 {
	h := slices.Clone(ids[:n])
	down := func(i int) {
		for {
			c := 2*i + 1
			if c >= n {
				return
			}
			if c+1 < n && cmp(h[c+1], h[c]) > 0 {
				c++
			}
			if cmp(h[c], h[i]) <= 0 {
				return
			}
			h[i], h[c] = h[c], h[i]
			i = c
		}
	}
	for i := n/2 - 1; i >= 0; i-- {
		down(i)
	}
	for _, id := range ids[n:] {
		if cmp(id, h[0]) < 0 {
			h[0] = id
			down(0)
		}
	}
	return h
}

// SortByTotal sorts stats by total samples, then self samples, then name.
func SortByTotal(stats []FuncStat) {
	slices.SortStableFunc(stats, func(a, b FuncStat) int {
		if c := cmp.Compare(b.Total, a.Total); c != 0 {
			return c
		}
		return cmp.Compare(b.Self, a.Self)
	})
}
