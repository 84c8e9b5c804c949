package analyze

import (
	"fmt"
	"slices"
	"testing"
)

// TestTopLines: the source lines of the samples, with inlined calls as
// frames each at its own line and the line that called it, and without
// them at the lines of their outermost callers; a frame no line names is
// its function's row without one. Each function's lines add up to its
// self samples in the function table.
func TestTopLines(t *testing.T) {
	p, err := LoadBytes(inlineCapture(t), LoadOptions{NoHostFiles: true})
	if err != nil {
		t.Fatal(err)
	}
	row := func(s FuncStat) string { return fmt.Sprintf("%s %s:%d %d/%d", s.Name, s.File, s.Line, s.Self, s.Total) }
	for _, c := range []struct {
		inline bool
		want   []string
	}{
		{true, []string{"leaf a.c:3 1/1", "outer a.c:13 1/1", "main :0 0/2", "middle a.c:8 0/1", "outer a.c:12 0/1"}},
		{false, []string{"outer a.c:12 1/1", "outer a.c:13 1/1", "main :0 0/2"}},
	} {
		v, err := p.View(ViewOptions{Inline: c.inline})
		if err != nil {
			t.Fatal(err)
		}
		lines, n := v.TopLines(v.Samples, 0)
		var got []string
		for _, s := range lines {
			got = append(got, row(s))
		}
		if !slices.Equal(got, c.want) || n != len(c.want) {
			t.Errorf("inline %v: lines %q (%d), want %q", c.inline, got, n, c.want)
		}
		self := map[FuncID]int{}
		for _, s := range lines {
			self[s.Func] += s.Self
		}
		for _, f := range v.Top(v.Samples) {
			if self[f.Func] != f.Self {
				t.Errorf("inline %v: %s has %d self samples, its lines %d", c.inline, f.Name, f.Self, self[f.Func])
			}
		}
		first, n := v.TopLines(v.Samples, 2)
		if n != len(c.want) || len(first) != 2 || row(first[0]) != c.want[0] || row(first[1]) != c.want[1] {
			t.Errorf("inline %v: the first 2 lines %v of %d", c.inline, first, n)
		}
	}
}
