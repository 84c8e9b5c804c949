package analyze

import (
	"cmp"
	"slices"

	"nsprof/capture"
)

// MarkStat summarizes the durations of the marks of one group and name,
// in nanoseconds, as Sysprof's mark summary does.
type MarkStat struct {
	Group string `json:"group"`
	Name  string `json:"name"`
	Count int    `json:"count"`
	// Min, Max, Total and P95 are durations of marks; Mean and Median may
	// fall between nanoseconds.
	Min   int64 `json:"min_ns"`
	Max   int64 `json:"max_ns"`
	Total int64 `json:"total_ns"`
	// Mean is Total/Count.
	Mean float64 `json:"mean_ns"`
	// Median is the middle duration, or the mean of the two middle ones
	// for an even count.
	Median float64 `json:"median_ns"`
	// P95 is the 95th percentile by nearest rank (see [Percentile]).
	P95 int64 `json:"p95_ns"`
}

// MarkStats returns the statistics of marks per group and name, sorted by
// group, then name.
func MarkStats(marks []capture.Mark) []MarkStat {
	type key struct{ group, name string }
	durs := make(map[key][]int64)
	for i := range marks {
		k := key{marks[i].Group, marks[i].Name}
		durs[k] = append(durs[k], marks[i].Duration)
	}
	out := make([]MarkStat, 0, len(durs))
	for k, d := range durs {
		slices.Sort(d)
		s := MarkStat{Group: k.group, Name: k.name, Count: len(d), Min: d[0], Max: d[len(d)-1]}
		for _, x := range d {
			s.Total += x
		}
		s.Mean = float64(s.Total) / float64(len(d))
		s.Median = Median(d)
		s.P95 = Percentile(d, 95)
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b MarkStat) int {
		if c := cmp.Compare(a.Group, b.Group); c != 0 {
			return c
		}
		return cmp.Compare(a.Name, b.Name)
	})
	return out
}

// Median returns the middle value of sorted, or the mean of the two
// middle values for an even count; 0 for no values. It is exact for
// values below 2^52.
func Median(sorted []int64) float64 {
	n := len(sorted)
	switch {
	case n == 0:
		return 0
	case n%2 == 1:
		return float64(sorted[n/2])
	}
	a, b := sorted[n/2-1], sorted[n/2]
	return float64(a) + float64(b-a)/2
}

// Percentile returns the p-th percentile (0 < p ≤ 100) of sorted by the
// nearest-rank method: the smallest value that at least p percent of the
// values do not exceed, the value at rank ⌈p×n/100⌉. It is always one of
// the values, computed in integers; 0 for no values.
func Percentile(sorted []int64, p int) int64 {
	n := len(sorted)
	if n == 0 {
		return 0
	}
	rank := (min(max(p, 1), 100)*n + 99) / 100
	return sorted[max(rank, 1)-1]
}
