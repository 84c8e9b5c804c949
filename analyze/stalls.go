package analyze

import (
	"cmp"
	"slices"
	"strconv"
	"strings"

	"nsprof/capture"
)

// DefaultStall is the duration over which a probed call is a stall: one
// frame at 60 Hz, 16 ms.
const DefaultStall = 16_000_000

// Stall is a probed call (a mark of group [capture.MainLoopGroup] or
// [capture.SpanGroup]) that took longer than a threshold, with what its
// thread ran meanwhile.
type Stall struct {
	Group    string `json:"group"`
	Name     string `json:"name"`
	Time     int64  `json:"time_ns"` // capture clock
	Duration int64  `json:"duration_ns"`
	PID      int32  `json:"pid"`
	// TID is the thread the call ran on: the "tid N" of the mark's
	// message, else the process's main thread.
	TID int32 `json:"tid"`
	// Samples counts the samples of the thread within the call (CPU and
	// off-CPU samples, when recorded); StackSamples those of them whose
	// functions are Stack, the most common of their stacks, root first.
	Samples      int      `json:"samples"`
	StackSamples int      `json:"stack_samples"`
	Stack        []string `json:"stack,omitempty"`
}

// StallStats count the stalls of one group and name.
type StallStats struct {
	Group string `json:"group"`
	Name  string `json:"name"`
	// Calls counts the marks, Stalls those longer than the threshold.
	Calls  int `json:"calls"`
	Stalls int `json:"stalls"`
}

// Stalls returns the probed calls among marks that took longer than
// threshold (nanoseconds), longest first, and the counts per group and
// name (sorted as [MarkStats]). The stalls' stacks are left empty: see
// [View.StallStacks].
func Stalls(marks []capture.Mark, threshold int64) ([]Stall, []StallStats) {
	type key struct{ group, name string }
	counts := map[key]*StallStats{}
	var stalls []Stall
	for i := range marks {
		m := &marks[i]
		if m.Group != capture.MainLoopGroup && m.Group != capture.SpanGroup {
			continue
		}
		k := key{m.Group, m.Name}
		c := counts[k]
		if c == nil {
			c = &StallStats{Group: m.Group, Name: m.Name}
			counts[k] = c
		}
		c.Calls++
		if m.Duration <= threshold {
			continue
		}
		c.Stalls++
		stalls = append(stalls, Stall{Group: m.Group, Name: m.Name, Time: m.Time, Duration: m.Duration, PID: m.PID, TID: markTID(m)})
	}
	slices.SortStableFunc(stalls, func(a, b Stall) int { return cmp.Compare(b.Duration, a.Duration) })
	stats := make([]StallStats, 0, len(counts))
	for _, c := range counts {
		stats = append(stats, *c)
	}
	slices.SortFunc(stats, func(a, b StallStats) int {
		return cmp.Or(cmp.Compare(a.Group, b.Group), cmp.Compare(a.Name, b.Name))
	})
	return stalls, stats
}

// markTID returns the thread of a probed call's mark: the "tid N" its
// message starts with, else its pid.
func markTID(m *capture.Mark) int32 {
	if v, ok := strings.CutPrefix(m.Message, "tid "); ok {
		v, _, _ = strings.Cut(v, " ")
		if n, err := strconv.ParseInt(v, 10, 32); err == nil && n > 0 {
			return int32(n)
		}
	}
	return m.PID
}

// StallStacks fills in what the thread of each stall ran during it: the
// number of the view's samples of that thread within the call, and the
// functions of their most common stack (ties go to the stack sampled
// first).
func (v *View) StallStacks(stalls []Stall) {
	byTID := map[int32][]int{}
	for i := range stalls {
		byTID[stalls[i].TID] = append(byTID[stalls[i].TID], i)
	}
	type tally struct {
		n     int
		first int
		path  []FuncID
	}
	counts := make([]map[string]*tally, len(stalls))
	var buf []FuncID
	for si := range v.Samples {
		s := &v.Samples[si]
		for _, i := range byTID[s.TID] {
			st := &stalls[i]
			if s.Time < st.Time || s.Time >= st.Time+st.Duration {
				continue
			}
			st.Samples++
			buf = v.Path(s.Stack, buf[:0])
			k := funcKey(buf)
			if counts[i] == nil {
				counts[i] = map[string]*tally{}
			}
			t := counts[i][k]
			if t == nil {
				t = &tally{first: si, path: slices.Clone(buf)}
				counts[i][k] = t
			}
			t.n++
		}
	}
	for i, m := range counts {
		var best *tally
		for _, t := range m {
			if best == nil || t.n > best.n || (t.n == best.n && t.first < best.first) {
				best = t
			}
		}
		if best == nil {
			continue
		}
		stalls[i].StackSamples = best.n
		for _, f := range best.path {
			stalls[i].Stack = append(stalls[i].Stack, v.Funcs[f].Name)
		}
	}
}

// funcKey is a map key for a path of functions.
func funcKey(path []FuncID) string {
	b := make([]byte, 0, 4*len(path))
	for _, f := range path {
		b = append(b, byte(f), byte(f>>8), byte(f>>16), byte(f>>24))
	}
	return string(b)
}
