package proc

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
)

// maxLine bounds the length of one line of a /proc file. Real lines are far
// shorter (a path is at most 4096 bytes), but mountinfo lines of overlay
// mounts with hundreds of layers exceed 64 KiB.
const maxLine = 1 << 20

// SyntaxError reports malformed input in a /proc file.
type SyntaxError struct {
	// File is the kind of file ("maps", "mountinfo") when the error comes
	// from a ParseX function, and the path when it comes through [FS].
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

// syntaxError builds a *SyntaxError, truncating text.
func syntaxError(file string, line int, text, format string, args ...any) *SyntaxError {
	const maxText = 80
	if len(text) > maxText {
		text = text[:maxText] + "..."
	}
	return &SyntaxError{File: file, Line: line, Msg: fmt.Sprintf(format, args...), Text: text}
}

// withPath replaces the file kind in a *SyntaxError by the path it was read
// from; other errors are returned unchanged.
func withPath(err error, path string) error {
	if se, ok := errors.AsType[*SyntaxError](err); ok {
		se.File = path
	}
	return err
}

// lineReader yields the lines of a /proc file without their '\n'. Unlike
// bufio.ScanLines it keeps a trailing '\r', which is legal in file names.
type lineReader struct {
	s    *bufio.Scanner
	file string
	n    int
}

func newLineReader(r io.Reader, file string) *lineReader {
	s := bufio.NewScanner(r)
	s.Buffer(make([]byte, 0, 4096), maxLine)
	s.Split(splitNewline)
	return &lineReader{s: s, file: file}
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

// next advances to the next line and reports whether there is one.
func (l *lineReader) next() bool {
	if !l.s.Scan() {
		return false
	}
	l.n++
	return true
}

// text returns the current line as a string.
func (l *lineReader) text() string { return l.s.Text() }

// errorf returns a *SyntaxError for the current line.
func (l *lineReader) errorf(text, format string, args ...any) error {
	return syntaxError(l.file, l.n, text, format, args...)
}

// err returns the error that stopped next, or nil at the end of input.
func (l *lineReader) err() error {
	err := l.s.Err()
	switch {
	case err == nil:
		return nil
	case errors.Is(err, bufio.ErrTooLong):
		return syntaxError(l.file, l.n+1, "", "line longer than %d bytes", maxLine)
	default:
		return fmt.Errorf("reading %s: %w", l.file, err)
	}
}

// readAll reads r to the end, failing if it holds more than limit bytes.
func readAll(r io.Reader, file string, limit int64) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", file, err)
	}
	if int64(len(data)) > limit {
		return nil, syntaxError(file, 0, "", "larger than %d bytes", limit)
	}
	return data, nil
}
