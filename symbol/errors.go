package symbol

import (
	"errors"
	"fmt"
	"strconv"
)

// ErrNoSymbols is returned when an object has no symbols of any kind.
var ErrNoSymbols = errors.New("no symbols")

// ErrRestrictedKernel is returned by [NewKallsyms] when every address in
// /proc/kallsyms reads as zero: the kernel hides them from this reader
// (kernel.kptr_restrict, or a reader without CAP_SYSLOG).
var ErrRestrictedKernel = errors.New("kernel symbol addresses are hidden (kptr_restrict); read /proc/kallsyms as root or set kernel.kptr_restrict=0")

// FormatError reports malformed data in a binary file, in the shape of
// debug/elf's FormatError.
type FormatError struct {
	// Off is the byte offset of the bad data in the file, or -1 if unknown.
	Off int64
	// Msg describes the problem.
	Msg string
	// Val is the offending value, or nil.
	Val any
}

// Error implements error as "msg 'val' at byte 0xoff".
func (e *FormatError) Error() string {
	s := e.Msg
	if e.Val != nil {
		s += fmt.Sprintf(" '%v'", e.Val)
	}
	if e.Off >= 0 {
		s += fmt.Sprintf(" at byte %#x", e.Off)
	}
	return s
}

// SyntaxError reports a malformed line of a text file (/proc/kallsyms, a
// perf map).
type SyntaxError struct {
	// File is the kind of file: "kallsyms" or "perf map".
	File string
	// Line is the 1-based line number.
	Line int
	// Msg describes the problem.
	Msg string
	// Text is the offending line, truncated to 80 bytes.
	Text string
}

// Error implements error as "file:line: msg "text"".
func (e *SyntaxError) Error() string {
	s := e.File + ":" + strconv.Itoa(e.Line) + ": " + e.Msg
	if e.Text != "" {
		s += " " + strconv.Quote(e.Text)
	}
	return s
}

func syntaxError(file string, line int, text []byte, msg string) *SyntaxError {
	const maxText = 80
	t := string(text)
	if len(t) > maxText {
		t = t[:maxText] + "..."
	}
	return &SyntaxError{File: file, Line: line, Msg: msg, Text: t}
}
