package capture

// Mark groups of the probed calls nsprof record writes (--speedtrack,
// --span): MARK frames Sysprof shows as rows of its timeline, named after
// the function, their message "tid N" when the call ran on a thread other
// than the process's main thread (a MARK frame has no thread of its own).
const (
	// MainLoopGroup is the group of the GLib main-loop iterations
	// (g_main_context_dispatch on main threads).
	MainLoopGroup = "mainloop"
	// SpanGroup is the group of the calls of functions named with
	// --span.
	SpanGroup = "span"
	// ProbeGroup is the group of the calls of functions named with
	// --probe, with --probe-marks.
	ProbeGroup = "probe"
)
