package analyze

import (
	"math"
	"strings"
)

// CounterStat summarizes the values of one counter.
type CounterStat struct {
	ID          uint32  `json:"id"`
	Category    string  `json:"category"`
	Name        string  `json:"name"`
	Description string  `json:"description,omitempty"`
	Count       int     `json:"count"`
	Min         float64 `json:"min"`
	Mean        float64 `json:"mean"`
	Max         float64 `json:"max"`
	Last        float64 `json:"last"`
}

// Stats returns the counter's count, min, mean (of the recorded values),
// max and last value among the points in [since, until) on the capture
// clock.
func (c *Counter) Stats(since, until int64) CounterStat {
	s := CounterStat{ID: c.ID, Category: c.Category, Name: c.Name, Description: c.Description,
		Min: math.Inf(1), Max: math.Inf(-1)}
	sum := 0.0
	for _, p := range c.Points {
		if p.Time < since || p.Time >= until {
			continue
		}
		s.Count++
		s.Min, s.Max = min(s.Min, p.Value), max(s.Max, p.Value)
		sum += p.Value
		s.Last = p.Value
	}
	if s.Count == 0 {
		s.Min, s.Max = 0, 0
		return s
	}
	s.Mean = sum / float64(s.Count)
	return s
}

// sparkLevels are the eight bar heights of a sparkline.
var sparkLevels = []rune("▁▂▃▄▅▆▇█")

// Sparkline draws the counter over [start, end) as width bars, each the
// last value at the end of its slice of time (a counter keeps its value
// until the next update), scaled between the minimum and maximum drawn.
// Slices before the first value are spaces.
func (c *Counter) Sparkline(start, end int64, width int) string {
	if width <= 0 || end <= start {
		return ""
	}
	vals := make([]float64, width)
	have := make([]bool, width)
	j := 0
	cur, ok := 0.0, false
	for i := range width {
		edge := start + int64(float64(end-start)*float64(i+1)/float64(width))
		for j < len(c.Points) && (c.Points[j].Time < edge || i == width-1) {
			cur, ok = c.Points[j].Value, true
			j++
		}
		vals[i], have[i] = cur, ok
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	for i, v := range vals {
		if have[i] {
			lo, hi = min(lo, v), max(hi, v)
		}
	}
	var b strings.Builder
	for i, v := range vals {
		switch {
		case !have[i]:
			b.WriteByte(' ')
		case hi == lo:
			b.WriteRune(sparkLevels[0])
		default:
			l := int((v - lo) / (hi - lo) * float64(len(sparkLevels)-1))
			b.WriteRune(sparkLevels[min(max(l, 0), len(sparkLevels)-1)])
		}
	}
	return b.String()
}
