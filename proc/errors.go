package proc

import (
	"errors"
	"fmt"
	"io"

	"nsprof/internal/procfmt"
)

// maxLine bounds the length of one line of a /proc file (see
// [procfmt.MaxLine]).
const maxLine = procfmt.MaxLine

// SyntaxError reports malformed input in a /proc file. File is the kind of
// file ("maps", "mountinfo") when the error comes from a ParseX function,
// and the path when it comes through [FS].
type SyntaxError = procfmt.SyntaxError

// syntaxError builds a *SyntaxError, truncating text.
func syntaxError(file string, line int, text, format string, args ...any) *SyntaxError {
	return procfmt.Errorf(file, line, text, format, args...)
}

// withPath replaces the file kind in a *SyntaxError by the path it was read
// from; other errors are returned unchanged.
func withPath(err error, path string) error {
	if se, ok := errors.AsType[*SyntaxError](err); ok {
		se.File = path
	}
	return err
}

// lineReader yields the lines of a /proc file (see [procfmt.LineReader]).
type lineReader = procfmt.LineReader

func newLineReader(r io.Reader, file string) *lineReader { return procfmt.NewLineReader(r, file) }

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
