//go:build !linux

package unix

import (
	"errors"
	"os"
)

// ErrNoExchange is returned by [ExchangePaths] when the file system (or
// kernel) cannot swap two names atomically.
var ErrNoExchange = errors.New("atomic exchange of names not supported")

// ExchangePaths swaps two names atomically on Linux; elsewhere it returns
// an error wrapping [ErrNoExchange].
func ExchangePaths(a, b string) error {
	return &os.LinkError{Op: "exchange", Old: a, New: b, Err: ErrNoExchange}
}

// Delalloc reports whether f's data is delayed-allocated on Linux;
// elsewhere known is false.
func Delalloc(f *os.File) (delalloc, known bool, err error) { return false, false, nil }
