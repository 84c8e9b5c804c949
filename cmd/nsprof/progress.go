package main

import (
	"io"
	"os"

	"nsprof/internal/progress"
	"nsprof/internal/unix"
)

// progressDelay is how long report and export run before they show their
// progress on a terminal.
var progressDelay = progress.DefaultDelay

// progressView is the stage shown while a view is built.
const progressView = "building the view"

// progressLine returns a progress line on w when w is a terminal, else
// nil, which shows nothing.
func progressLine(w io.Writer) *progress.Line {
	f, ok := w.(*os.File)
	if !ok || !unix.IsTerminal(int(f.Fd())) {
		return nil
	}
	return progress.New(f, unix.TerminalWidth(int(f.Fd())), progressDelay)
}
