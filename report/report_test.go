package report

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"nsprof/analyze"
)

// TestGenerateNeedsData checks that a view without its data, the memory
// view as JSON and an unknown view are errors that name the view.
func TestGenerateNeedsData(t *testing.T) {
	for _, tc := range []struct {
		d    Data
		o    Options
		want string
	}{
		{Data{}, Options{}, "report top: no data for the view: want an analyze.View"},
		{Data{Timeline: &analyze.Timeline{}}, Options{View: ViewTree}, "report tree: no data"},
		{Data{View: &analyze.View{}}, Options{View: ViewMarks}, "report marks: no data for the view: want an analyze.Timeline"},
		{Data{}, Options{View: ViewMemory}, "report memory: no data for the view: want an analyze.View"},
		{Data{View: &analyze.View{}}, Options{View: ViewMemory, Format: JSON}, "the memory view is text only"},
		{Data{}, Options{View: View(42)}, "unknown view View(42)"},
		{Data{View: &analyze.View{}}, Options{View: ViewTree, Lines: true}, "source lines are the rows of a function table"},
		{Data{View: &analyze.View{}, Base: &analyze.View{}}, Options{Lines: true}, "source lines are the rows of a function table"},
	} {
		var buf bytes.Buffer
		err := Generate(&buf, tc.d, tc.o)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v %v: error %v, want %q", tc.o.View, tc.o.Format, err, tc.want)
		}
		if tc.want != "the memory view is text only" && !strings.HasPrefix(tc.want, "unknown") && !tc.o.Lines && !errors.Is(err, errNoData) {
			t.Errorf("%v: %v is not errNoData", tc.o.View, err)
		}
		if buf.Len() != 0 {
			t.Errorf("%v: wrote %q before failing", tc.o.View, buf.String())
		}
	}
}

func TestFormatters(t *testing.T) {
	for _, tc := range []struct{ got, want string }{
		{fmtDuration(812), "812ns"}, {fmtDuration(3250), "3.250µs"}, {fmtDuration(2.5e6), "2.500ms"}, {fmtDuration(1.2e9), "1.200s"},
		{fmtBytes(1023), "1023 B"}, {fmtBytes(1536), "1.50 KiB"}, {fmtBytes(3 << 20), "3.00 MiB"}, {fmtBytes(5 << 30), "5.00 GiB"},
		{fmtValue(7), "7"}, {fmtValue(58.333), "58.33"}, {seconds3(8_250_000), "0.008s"},
		{SeverityName(0), "LEVEL0"}, {ViewBottomUp.String(), "bottom-up"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
}
