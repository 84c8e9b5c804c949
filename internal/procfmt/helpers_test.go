package procfmt

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

// checkParse compares a parser's result and error with a table entry. A
// non-empty wantErr must be a substring of the error, which must be a
// *SyntaxError naming wantLine.
func checkParse[T any](t *testing.T, got T, err error, want T, wantErr string, wantLine int) {
	t.Helper()
	if wantErr != "" {
		if err == nil {
			t.Fatalf("got no error, want %q; result %+v", wantErr, got)
		}
		if !strings.Contains(err.Error(), wantErr) {
			t.Fatalf("error %q does not contain %q", err, wantErr)
		}
		se, ok := errors.AsType[*SyntaxError](err)
		if !ok {
			t.Fatalf("error %v (%T) is not a *SyntaxError", err, err)
		}
		if se.Line != wantLine {
			t.Errorf("error line = %d, want %d", se.Line, wantLine)
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
