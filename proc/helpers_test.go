package proc

import (
	"errors"
	"testing"

	"nsprof/internal/testutils"
)

// syntaxLine says whether err is a *SyntaxError and the line it names.
func syntaxLine(err error) (int, bool) {
	se, ok := errors.AsType[*SyntaxError](err)
	if !ok {
		return 0, false
	}
	return se.Line, true
}

// checkParse is testutils.CheckParse for this package's parsers.
func checkParse[T any](t *testing.T, got T, err error, want T, wantErr string, wantLine int) {
	t.Helper()
	testutils.CheckParse(t, syntaxLine, got, err, want, wantErr, wantLine)
}
