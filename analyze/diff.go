package analyze

import (
	"cmp"
	"math"
	"slices"
)

// FuncDiff compares one function's share of two selections, a base's
// (an earlier capture's, say) and another's, as perf diff and pprof's
// -diff_base compare profiles: by the function's name, DSO and whether
// it is kernel code, its share in percent of each selection's weight.
type FuncDiff struct {
	Name   string `json:"function"`
	DSO    string `json:"dso"`
	Kernel bool   `json:"kernel,omitempty"`
	// BaseSelf, BaseTotal, Self and Total are the function's self and
	// total values ([FuncStat]) in the base and in the other selection,
	// 0 where it was not sampled; the percents are their shares.
	BaseSelf         int     `json:"base_self"`
	BaseTotal        int     `json:"base_total"`
	Self             int     `json:"self"`
	Total            int     `json:"total"`
	BaseSelfPercent  float64 `json:"base_self_percent"`
	BaseTotalPercent float64 `json:"base_total_percent"`
	SelfPercent      float64 `json:"self_percent"`
	TotalPercent     float64 `json:"total_percent"`
	SelfDelta        float64 `json:"self_delta"`
	TotalDelta       float64 `json:"total_delta"`
}

// DiffTop joins the function tables of two selections, base and cur (as
// [Profile.Top] gives them, percents included), and returns each
// function's difference, the largest change of its self share first (of
// its total share with byTotal), then by name and DSO. A function
// sampled in one selection only has zeros in the other.
func DiffTop(base, cur []FuncStat, byTotal bool) []FuncDiff {
	type key struct {
		name, dso string
		kernel    bool
	}
	at := make(map[key]int, len(base)+len(cur))
	var out []FuncDiff
	get := func(s *FuncStat) *FuncDiff {
		k := key{s.Name, s.DSO, s.Kernel}
		i, ok := at[k]
		if !ok {
			i = len(out)
			at[k] = i
			out = append(out, FuncDiff{Name: s.Name, DSO: s.DSO, Kernel: s.Kernel})
		}
		return &out[i]
	}
	for i := range base {
		d := get(&base[i])
		d.BaseSelf, d.BaseTotal = base[i].Self, base[i].Total
		d.BaseSelfPercent, d.BaseTotalPercent = base[i].SelfPercent, base[i].TotalPercent
	}
	for i := range cur {
		d := get(&cur[i])
		d.Self, d.Total = cur[i].Self, cur[i].Total
		d.SelfPercent, d.TotalPercent = cur[i].SelfPercent, cur[i].TotalPercent
	}
	for i := range out {
		d := &out[i]
		d.SelfDelta = d.SelfPercent - d.BaseSelfPercent
		d.TotalDelta = d.TotalPercent - d.BaseTotalPercent
	}
	slices.SortFunc(out, func(a, b FuncDiff) int {
		da, db := math.Abs(a.SelfDelta), math.Abs(b.SelfDelta)
		if byTotal {
			da, db = math.Abs(a.TotalDelta), math.Abs(b.TotalDelta)
		}
		return cmp.Or(cmp.Compare(db, da), cmp.Compare(a.Name, b.Name), cmp.Compare(a.DSO, b.DSO), cmpBool(a.Kernel, b.Kernel))
	})
	return out
}

// cmpBool orders false before true.
func cmpBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case !a:
		return -1
	}
	return 1
}
