// Package testutils holds helpers shared by nsprof's tests.
//
// Tests that need something from the machine (a compiler, a C library, a
// kernel feature, root) must not pass silently in CI when that thing is
// missing: there a missing prerequisite is a broken CI image, not a reason
// to skip. [RequireCI] encodes that rule: it fails the test when the CI
// environment variable says we are in CI, and skips it otherwise. [InCI]
// is the module's only reader of that variable (TestOneCIReader checks).
//
// The tests of nsprof/capture import this package, so it must not import
// nsprof/capture (that would be an import cycle in those tests).
package testutils

import (
	"os"
	"os/exec"
	"strconv"
	"testing"
)

// InCI reports whether the tests run in CI, that is whether the CI
// environment variable holds a true value as understood by
// strconv.ParseBool ("true", "1", "TRUE", …), as GitHub Actions, GitLab CI
// and most other CI systems set it.
func InCI() bool {
	v, err := strconv.ParseBool(os.Getenv("CI"))
	return err == nil && v
}

// RequireCI reports a missing test prerequisite. In CI (see [InCI]) it
// fails the test with t.Fatalf, so a CI image that lacks a tool or library
// breaks the build instead of silently skipping the tests that need it;
// elsewhere it skips the test with t.Skipf. Either way the test stops.
// Say in the message what is missing and how to install it, e.g.
//
//	testutils.RequireCI(t, "gcc not found (apt-get install gcc): %v", err)
func RequireCI(t testing.TB, format string, args ...any) {
	t.Helper()
	if InCI() {
		t.Fatalf("CI=%s: required test prerequisite missing: "+format, append([]any{os.Getenv("CI")}, args...)...)
	}
	t.Skipf(format, args...)
}

// RequireRoot stops a test that needs root (see [RequireCI]) when the
// effective user is not root; why says what needs it, e.g.
//
//	testutils.RequireRoot(t, "recording tests need root")
func RequireRoot(t testing.TB, why string) {
	t.Helper()
	if os.Geteuid() != 0 {
		RequireCI(t, "%s (euid %d)", why, os.Geteuid())
	}
}

// LookPathOrSkip returns the path of the executable name found with
// exec.LookPath. If it is not found, the test stops through [RequireCI]:
// it fails in CI and is skipped elsewhere.
func LookPathOrSkip(t testing.TB, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		RequireCI(t, "%s not found in PATH: %v", name, err)
	}
	return p
}
