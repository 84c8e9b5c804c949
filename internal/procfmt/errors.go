package procfmt

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
)

// MaxLine bounds the length of one line of a /proc file. Real lines are far
// shorter (a path is at most 4096 bytes), but mountinfo lines of overlay
// mounts with hundreds of layers exceed 64 KiB.
const MaxLine = 1 << 20

// SyntaxError reports malformed input in a /proc file.
type SyntaxError struct {
	// File is the kind of file ("maps", "mountinfo") when the error comes
	// from a ParseX function, and the path when it comes from a function
	// that read a file.
	File string
	// Line is the 1-based line number, or 0 for files that are not read
	// line by line.
	Line int
	// Msg describes the problem.
	Msg string
	// Text is the offending text, truncated to 80 bytes.
	Text string
}

// Error implements error as "file:line: msg "text"".
func (e *SyntaxError) Error() string {
	s := e.File
	if e.Line > 0 {
		s += ":" + strconv.Itoa(e.Line)
	}
	s += ": " + e.Msg
	if e.Text != "" {
		s += " " + strconv.Quote(e.Text)
	}
	return s
}

// Errorf returns a *SyntaxError for line of file (0 when the file is not
// read line by line) with the offending text, truncated to 80 bytes.
func Errorf(file string, line int, text, format string, args ...any) *SyntaxError {
	const maxText = 80
	if len(text) > maxText {
		text = text[:maxText] + "..."
	}
	return &SyntaxError{File: file, Line: line, Msg: fmt.Sprintf(format, args...), Text: text}
}

// LineReader yields the lines of a /proc file without their '\n'. Unlike
// bufio.ScanLines it keeps a trailing '\r', which is legal in file names.
type LineReader struct {
	s    *bufio.Scanner
	file string
	n    int
}

// NewLineReader returns a LineReader over r; file is the file kind its
// errors name.
func NewLineReader(r io.Reader, file string) *LineReader {
	s := bufio.NewScanner(r)
	s.Buffer(make([]byte, 0, 4096), MaxLine)
	s.Split(splitNewline)
	return &LineReader{s: s, file: file}
}

func splitNewline(data []byte, atEOF bool) (int, []byte, error) {
	if i := bytes.IndexByte(data, '\n'); i >= 0 {
		return i + 1, data[:i], nil
	}
	if atEOF && len(data) > 0 {
		return len(data), data, nil
	}
	return 0, nil, nil
}

// Next advances to the next line and reports whether there is one.
func (l *LineReader) Next() bool {
	if !l.s.Scan() {
		return false
	}
	l.n++
	return true
}

// Text returns the current line as a string.
func (l *LineReader) Text() string { return l.s.Text() }

// Errorf returns a *SyntaxError for the current line.
func (l *LineReader) Errorf(text, format string, args ...any) error {
	return Errorf(l.file, l.n, text, format, args...)
}

// Err returns the error that stopped Next, or nil at the end of input. A
// line longer than [MaxLine] is a *SyntaxError.
func (l *LineReader) Err() error {
	err := l.s.Err()
	switch {
	case err == nil:
		return nil
	case errors.Is(err, bufio.ErrTooLong):
		return Errorf(l.file, l.n+1, "", "line longer than %d bytes", MaxLine)
	default:
		return fmt.Errorf("reading %s: %w", l.file, err)
	}
}
