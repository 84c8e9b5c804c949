package report

import (
	"bytes"
	"strings"
	"testing"

	"nsprof/analyze"
	"nsprof/capture"
)

// TestStallsText: the marks view of a timeline with main-loop marks
// counts the stalls over the threshold, draws them on the timeline strip
// and lists the longest first; without a View no stacks are shown; a
// timeline without probed calls shows no stall section.
func TestStallsText(t *testing.T) {
	const start = 1_000_000_000
	mark := func(at, dur int64) capture.Mark {
		return capture.Mark{FrameHeader: capture.FrameHeader{Time: start + at, PID: 42}, Duration: dur,
			Group: capture.MainLoopGroup, Name: "g_main_context_dispatch"}
	}
	var marks []capture.Mark
	for i := range int64(10) {
		marks = append(marks, mark(i*10_000_000, 1_000_000))
	}
	marks = append(marks, mark(500_000_000, 250_000_000), mark(900_000_000, 20_000_000))
	tl := &analyze.Timeline{Start: start, End: start + 1_000_000_000, Marks: marks,
		Metadata: map[string]string{capture.MetaSpanUnpaired: "3"}}
	var b bytes.Buffer
	if err := Generate(&b, Data{Timeline: tl}, Options{View: ViewMarks}); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"Stalls: probed calls over 16.000ms",
		"mainloop:g_main_context_dispatch      12       2  |....                ###########     #   |",
		"Longest stalls (2 of 2)",
		"warning: 3 probed calls were not marked",
		"   0.500s   250.000ms       42       42  mainloop:g_main_context_dispatch\n   0.900s",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("marks view lacks %q:\n%s", want, out)
		}
	}
	if i, j := strings.Index(out, "250.000ms       42"), strings.Index(out, "20.000ms       42"); i < 0 || j < i {
		t.Errorf("stalls not longest first:\n%s", out)
	}
	b.Reset()
	if err := Generate(&b, Data{Timeline: tl}, Options{View: ViewMarks, Stall: 300_000_000}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "      12       0  |") || strings.Contains(b.String(), "Longest") {
		t.Errorf("--stall 300ms: want no stall:\n%s", b.String())
	}
	b.Reset()
	tl.Marks = []capture.Mark{{Group: "gtk", Name: "frame", Duration: 1e9}}
	if err := Generate(&b, Data{Timeline: tl}, Options{View: ViewMarks}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "Stalls") {
		t.Errorf("stall section without probed calls:\n%s", b.String())
	}
}
