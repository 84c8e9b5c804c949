package testutils

import (
	"bytes"
	"io"
	"reflect"
	"strings"
	"testing"
)

// SyntaxLine tells whether err is a parser's syntax error type and the
// line it names: the one thing the parse helpers need to know of a
// package's error type.
type SyntaxLine func(err error) (line int, ok bool)

// CheckParse compares a parser's result and error with a table entry. A
// non-empty wantErr must be a substring of the error, which must be of the
// syntax error type (as syntax says) naming wantLine, with the zero result.
func CheckParse[T any](t *testing.T, syntax SyntaxLine, got T, err error, want T, wantErr string, wantLine int) {
	t.Helper()
	if wantErr != "" {
		if err == nil {
			t.Fatalf("got no error, want %q; result %+v", wantErr, got)
		}
		if !strings.Contains(err.Error(), wantErr) {
			t.Fatalf("error %q does not contain %q", err, wantErr)
		}
		line, ok := syntax(err)
		if !ok {
			t.Fatalf("error %v (%T) is not a syntax error", err, err)
		}
		if line != wantLine {
			t.Errorf("error line = %d, want %d", line, wantLine)
		}
		if !reflect.ValueOf(&got).Elem().IsZero() {
			t.Errorf("result with error is not zero: %+v", got)
		}
		return
	}
	if err != nil {
		t.Fatalf("unexpected error: %v", err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got  %+v\nwant %+v", got, want)
	}
}

// FuzzParser runs parse on the fuzz input: an error must be of the syntax
// error type (a bytes.Reader never fails) and come with the zero result;
// on success check, if not nil, checks the result.
func FuzzParser[T any](f *testing.F, syntax SyntaxLine, parse func(io.Reader) (T, error), check func(*testing.T, []byte, T)) {
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := parse(bytes.NewReader(data))
		if err != nil {
			if _, ok := syntax(err); !ok {
				t.Fatalf("error %v (%T) is not a syntax error", err, err)
			}
			if !reflect.ValueOf(&v).Elem().IsZero() {
				t.Fatalf("error %v with non-zero result %+v", err, v)
			}
			return
		}
		if check != nil {
			check(t, data, v)
		}
	})
}

// Reparse formats v with format, parses the text again and compares.
func Reparse[T any](t *testing.T, v T, format func(T) string, parse func(io.Reader) (T, error)) {
	t.Helper()
	text := format(v)
	again, err := parse(strings.NewReader(text))
	if err != nil {
		t.Fatalf("parsing formatted %q: %v", text, err)
	}
	if !reflect.DeepEqual(v, again) {
		t.Fatalf("round trip through %q:\n got %+v\nwant %+v", text, again, v)
	}
}
