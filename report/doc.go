// Package report renders the views of `nsprof report` as text or as the
// JSON document of schema [Schema]: the function table ([ViewTop]; by
// source line with [Options.Lines]), the call trees ([ViewTree],
// [ViewBottomUp]), the heap profile ([ViewMemory]) and the views of a
// capture's timeline ([ViewMarks], [ViewCounters], [ViewProcesses],
// [ViewLogs], [ViewSummary]). [Generate] renders the view and format
// [Options] pick.
//
// The package renders what analyze loaded; it opens no file and knows no
// terminal: the caller loads the capture, and passes the terminal's width
// and the rows that fit in it as [Options.Width] and [Options.Limit]. The
// output depends only on the data and the options, never on the clock.
//
// Every name and message taken from a capture is escaped with
// internal/textsafe before it is printed, so that a capture cannot send
// control sequences to a terminal or break the JSON document.
//
// Concurrency: the functions only read their data; several may run at
// once on the same data.
package report
