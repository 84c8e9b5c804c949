package unix

import (
	"fmt"
	"runtime"
)

// ErrNotSupportedOnOS is returned by every function on systems other than Linux.
var ErrNotSupportedOnOS = fmt.Errorf("not supported on %s", runtime.GOOS)

// errNonLinux names the caller in the error returned on other systems.
func errNonLinux(what string) error {
	return fmt.Errorf("%s: %w", what, ErrNotSupportedOnOS)
}
