package report

import (
	"fmt"
	"math"
)

// seconds3 prints ns as seconds with three decimals: "1.250s".
func seconds3(ns int64) string { return fmt.Sprintf("%.3fs", float64(ns)/1e9) }

// fmtDuration prints ns with three decimals in the largest unit below it:
// "812ns", "3.250µs", "2.500ms", "1.200s".
func fmtDuration(ns float64) string {
	a := math.Abs(ns)
	switch {
	case a < 1e3:
		return fmt.Sprintf("%.0fns", ns)
	case a < 1e6:
		return fmt.Sprintf("%.3fµs", ns/1e3)
	case a < 1e9:
		return fmt.Sprintf("%.3fms", ns/1e6)
	}
	return fmt.Sprintf("%.3fs", ns/1e9)
}

// fmtValue prints a counter value: integers as such, others with two
// decimals.
func fmtValue(v float64) string {
	if v == math.Trunc(v) && math.Abs(v) < 1e15 {
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.2f", v)
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
