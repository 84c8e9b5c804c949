package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"

	"nsprof/internal/exepages"
	"nsprof/internal/textsafe"
)

// version is set at build time with
// -ldflags "-X main.version=$(git describe --always --dirty)". When empty,
// the module version or VCS revision from the build info is used, else "dev".
var version string

// versionString returns the version printed by --version.
func versionString() string {
	if version != "" {
		return version
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "dev"
	}
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	var rev, dirty string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				dirty = "-dirty"
			}
		}
	}
	if rev == "" {
		return "dev"
	}
	return rev[:min(len(rev), 12)] + dirty
}

// usageError is a mistake on the command line; it exits with status 2.
type usageError struct{ err error }

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

// usagef returns a usageError for cmd, pointing at its help.
func usagef(cmd *cobra.Command, format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	if cmd.HasParent() {
		msg = strings.TrimPrefix(cmd.CommandPath(), cmd.Root().Name()+" ") + ": " + msg
	}
	return &usageError{fmt.Errorf("%s (see '%s --help')", msg, cmd.CommandPath())}
}

// usageArgs wraps a cobra argument validator so that its errors are usage
// errors.
func usageArgs(v cobra.PositionalArgs) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if err := v(cmd, args); err != nil {
			return usagef(cmd, "%v", err)
		}
		return nil
	}
}

// exitStatus prints err, if any, as "nsprof: <err>" to stderr and returns
// the process exit status: 0 on success, 2 for usage errors, 1 otherwise.
func exitStatus(err error, stderr io.Writer) int {
	if err == nil {
		return 0
	}
	fmt.Fprintf(stderr, "nsprof: %s\n", textsafe.Escape(err.Error()))
	if e, ok := errors.AsType[*exitCode](err); ok {
		return e.code
	}
	if _, ok := errors.AsType[*usageError](err); ok {
		return 2
	}
	return 1
}

// run executes the nsprof command line args (without the program name),
// reading standard input from os.Stdin.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return runIO(ctx, args, os.Stdin, stdout, stderr)
}

// runIO is run with an explicit standard input.
func runIO(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	root := newRootCmd()
	if args == nil {
		args = []string{} // nil makes cobra read os.Args
	}
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	return root.ExecuteContext(ctx)
}

// releasePages lets the pages of nsprof's binary that are not in use
// leave its resident set (exepages.Release). It cannot fail in a way that
// matters: on error, less memory is given back. (A variable for the test
// that counts its calls.)
var releasePages = func() { _, _ = exepages.Release() }

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "nsprof",
		Short: "Profile Linux processes, containers included, into Sysprof captures",
		Long: `nsprof records processes with perf_event_open into GNOME Sysprof captures
(.syscap) and reports on them.`,
		Version:       versionString(),
		SilenceErrors: true,
		SilenceUsage:  true,
		Args: usageArgs(func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				msg := fmt.Sprintf("unknown command %q", args[0])
				if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
					msg += fmt.Sprintf("; did you mean %s?", strings.Join(s, ", "))
				}
				return errors.New(msg)
			}
			return nil
		}),
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
		// Every command starts by letting go of the binary's pages
		// that initialization touched (see package exepages).
		PersistentPreRun: func(*cobra.Command, []string) { releasePages() },
	}
	root.SuggestionsMinimumDistance = 2
	root.SetVersionTemplate("nsprof {{.Version}}\n")
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error { return usagef(cmd, "%v", err) })
	root.CompletionOptions.HiddenDefaultCmd = true
	root.AddCommand(newRecordCmd(), newDumpCmd(), newCatCmd(), newReportCmd(), newExportCmd(), newWebCmd(), newPushCmd(), newAgentCmd(), newFillCmd())
	return root
}
