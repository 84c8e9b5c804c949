package report

import (
	"errors"
	"fmt"
	"io"
	"time"

	"nsprof/analyze"
)

// Schema names the JSON document format. Any change that is not adding a
// field changes the version.
const Schema = "nsprof-report/1"

// View is one of the report's views.
type View int

// Views. The sample views and [ViewMemory] render an [analyze.View],
// the others an [analyze.Timeline].
const (
	// ViewTop is the function table: self and total samples per function.
	ViewTop View = iota
	// ViewTree is the top-down call tree.
	ViewTree
	// ViewBottomUp is the callers tree of each function samples were
	// taken in.
	ViewBottomUp
	// ViewMemory is the heap profile: totals, peak, top functions by
	// bytes and count, the allocation tree, leaks and temporaries. Text
	// only.
	ViewMemory
	// ViewMarks are mark counts and durations per group:name, and what
	// the collectors lost.
	ViewMarks
	// ViewCounters are each counter's min, mean and max, with a
	// sparkline.
	ViewCounters
	// ViewProcesses are the process lifetimes with their threads.
	ViewProcesses
	// ViewLogs are the log messages.
	ViewLogs
	// ViewSummary are the capture's facts and its frames by type.
	ViewSummary
	// ViewCalls is the flat profile and call graph of the instrumented
	// calls (record --calls), as gprof prints them.
	ViewCalls
)

var viewNames = [...]string{"top", "tree", "bottom-up", "memory", "marks", "counters", "processes", "logs", "summary", "calls"}

// String returns the view's name, as the JSON document's "view" field
// has it.
func (v View) String() string {
	if v >= 0 && int(v) < len(viewNames) {
		return viewNames[v]
	}
	return fmt.Sprintf("View(%d)", int(v))
}

// Timeline reports whether v is a view of an [analyze.Timeline].
func (v View) Timeline() bool { return v >= ViewMarks && v <= ViewSummary }

// Format is an output format.
type Format int

// Formats.
const (
	// Text is for people: aligned tables, cut to [Options.Width].
	Text Format = iota
	// JSON is one document of schema [Schema].
	JSON
)

// Options configure [Generate]. The zero value is the default: the
// function table as text, every row, lines not cut.
type Options struct {
	// View is the view to render. Default [ViewTop].
	View View
	// Format is the output format. Default [Text].
	Format Format
	// File names the capture on the text's first line and in the JSON
	// document's capture.file. Default "".
	File string
	// BaseFile names the base capture of a comparison ([Data.Base]) as
	// File names the other. Default "".
	BaseFile string
	// Select is the selection that made the data: the text says how
	// many samples it selected when it selects or shapes any, and the
	// timeline views keep the marks, logs and processes of its
	// Filter.PIDs between its Filter.Since and Filter.Until (the other
	// fields do not apply to them). Default: everything.
	Select analyze.ViewOptions
	// By splits the sample views into one section per group. Default
	// [analyze.GroupNone].
	By analyze.GroupBy
	// Depth is how many tree levels the tree views (and the memory
	// view's tree) print. Default 0: all.
	Depth int
	// MinPercent leaves out tree nodes under this share of the samples
	// (of the bytes in the memory view). Default 0: none.
	MinPercent float64
	// SortTotal sorts the function table by total instead of self
	// samples. Default false.
	SortTotal bool
	// Lines makes the function table ([ViewTop]) one row per source
	// line of a function, as pprof -lines and perf report --sort
	// sym,srcline do (see [analyze.Profile.TopLines]). Default false.
	Lines bool
	// Limit is the number of table rows (per group, and per table in the
	// memory view). Default 0 (or negative): all.
	Limit int
	// Width cuts text lines to this many columns, as a terminal's width.
	// Default 0: lines are not cut.
	Width int
	// Stall is the duration over which the marks view flags a probed
	// call (a mark of --speedtrack or --span) as a stall. Default 0:
	// [analyze.DefaultStall], one frame at 60 Hz.
	Stall time.Duration
	// Damage is the error that ended loading the data early, if any: the
	// JSON document has it as capture.damage, and the memory view's text
	// starts with it as a warning. Default nil.
	Damage error
}

// Data is what the views render; each view needs one of its fields.
type Data struct {
	// View holds the samples of the sample views: [ViewTop], [ViewTree]
	// and [ViewBottomUp], of [ViewCalls], and of [ViewMemory], where it must weigh an
	// allocation type (alloc_space, ...).
	View *analyze.View
	// Timeline is the timeline of the timeline views. The marks view
	// also takes View, when set, for the stacks of the stalls (see
	// [analyze.View.StallStacks]).
	Timeline *analyze.Timeline
	// Base, with [ViewTop], is the selection of a capture View is
	// compared with: the view gives each function's shares in both and
	// their difference (see [analyze.DiffTop]).
	Base *analyze.View
}

// errNoData is returned by Generate when the view's data is missing.
var errNoData = errors.New("no data for the view")

// Generate writes view o.View of d to w in format o.Format.
func Generate(w io.Writer, d Data, o Options) error {
	if o.Lines && (o.View != ViewTop || d.Base != nil) {
		return fmt.Errorf("report %v: source lines are the rows of a function table, not of this view or of a comparison", o.View)
	}
	switch {
	case o.View.Timeline():
		if d.Timeline == nil {
			return fmt.Errorf("report %v: %w: want an analyze.Timeline", o.View, errNoData)
		}
		return timelineView(w, d.Timeline, d.View, o)
	case o.View == ViewMemory:
		if d.View == nil {
			return fmt.Errorf("report %v: %w: want an analyze.View", o.View, errNoData)
		}
		if o.Format != Text {
			return fmt.Errorf("report %v: the memory view is text only", o.View)
		}
		return memoryText(w, d.View, o)
	case o.View == ViewCalls:
		if d.View == nil {
			return fmt.Errorf("report %v: %w: want an analyze.View", o.View, errNoData)
		}
		if o.Format == JSON {
			return callsJSON(w, d.View, o)
		}
		return callsText(w, d.View, o)
	case d.Base != nil:
		if o.View != ViewTop || o.By != analyze.GroupNone {
			return fmt.Errorf("report %v: a comparison with a base capture is of the top view, not grouped", o.View)
		}
		if d.View == nil {
			return fmt.Errorf("report %v: %w: want an analyze.View", o.View, errNoData)
		}
		if o.Format == JSON {
			return diffJSON(w, d.View, d.Base, o)
		}
		return diffText(w, d.View, d.Base, o)
	case o.View >= ViewTop && o.View <= ViewBottomUp:
		if d.View == nil {
			return fmt.Errorf("report %v: %w: want an analyze.View", o.View, errNoData)
		}
		if o.Format == JSON {
			return samplesJSON(w, d.View, o)
		}
		return samplesText(w, d.View, o)
	}
	return fmt.Errorf("report: unknown view %v", o.View)
}

// Shaped reports whether v selects samples or changes their stacks, so
// that a report says how many samples it selected.
func Shaped(v analyze.ViewOptions) bool {
	return !v.Filter.IsZero() || v.HideKernel || v.Focus != "" || v.FocusDSO != ""
}
