package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"

	"github.com/spf13/cobra"

	"nsprof/capture"
)

// catOptions are the settings of `nsprof cat`.
type catOptions struct {
	// Inputs are the captures to merge, in order.
	Inputs []string
	// Output is the capture to write, or "" or "-" for standard output
	// (refused when that is a terminal).
	Output string
	// Force allows overwriting an existing Output.
	Force bool
}

func newCatCmd() *cobra.Command {
	var opts catOptions
	cmd := &cobra.Command{
		Use:   "cat [flags] FILE... [-o OUT]",
		Short: "Merge captures into one",
		Long: `Cat merges captures into one, as sysprof-cat does: JIT addresses and counter
ids are renumbered, and the header spans from the earliest start to the latest
end of the inputs. The inputs' symbol bundles (__symbols__), source lines,
process files, off-CPU records, off-CPU and blocking stacks and call counts
are merged into one of each, so that
nsprof and Sysprof name the processes of every input; other embedded files
are copied, and where two inputs have one at the same path (the kernel
symbols of two boots) readers use the first input's. Every input is merged, a damaged one up to its damage (and
nothing of one that is not a capture); cat then names each damaged input with
the offset and nature of its damage, and exits with status 1.

OUT must not exist unless -f is given. Without -o, or with "-o -", cat writes
to standard output, which must not be a terminal (as sysprof-cat does when
its output is redirected).`,
		Example: `  nsprof cat a.syscap b.syscap -o merged.syscap
  nsprof cat a.syscap b.syscap > merged.syscap
  nsprof cat a.syscap b.syscap | ssh host 'cat > merged.syscap'`,
		Args: usageArgs(cobra.MinimumNArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Inputs = args
			for _, in := range args {
				if in == "-" {
					return usagef(cmd, "cannot read a capture from standard input: cat needs to seek")
				}
			}
			return catCaptures(cmd.Context(), opts, cmd.OutOrStdout())
		},
	}
	f := cmd.Flags()
	f.StringVarP(&opts.Output, "output", "o", "", "write the merged capture to `OUT` (default or \"-\": standard output, never a terminal)")
	f.BoolVarP(&opts.Force, "force", "f", false, "overwrite OUT if it exists")
	return cmd
}

// catCaptures runs `nsprof cat`: it merges opts.Inputs into opts.Output,
// or into stdout when Output is "" or "-" and stdout is not a terminal.
func catCaptures(ctx context.Context, opts catOptions, stdout io.Writer) (err error) {
	srcs := make([]io.ReadSeeker, len(opts.Inputs))
	infos := make([]fs.FileInfo, len(opts.Inputs))
	for i, p := range opts.Inputs {
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		if infos[i], err = f.Stat(); err != nil {
			return err
		}
		srcs[i] = &ctxReadSeeker{ctx: ctx, rs: f}
	}

	out := stdout
	if opts.Output == "" || opts.Output == "-" {
		if isTerminal(stdout) {
			return errors.New("refusing to write a capture to a terminal: redirect standard output (nsprof cat A B > OUT) or use -o FILE")
		}
	} else {
		if st, err := os.Stat(opts.Output); err == nil {
			for i, in := range infos {
				if os.SameFile(st, in) {
					return fmt.Errorf("%s: output would overwrite input %s", opts.Output, opts.Inputs[i])
				}
			}
		}
		f, oerr := createOutput(opts.Output, opts.Force, 0o640)
		if oerr != nil {
			return oerr
		}
		defer func() { // sets the named result err
			if cerr := f.Close(); err == nil && cerr != nil {
				err = cerr
			}
		}()
		out = f.File
	}
	return capture.CatFiles(out, srcs, opts.Inputs, capture.CatOptions{})
}

// isTerminal reports whether w is a character device other than /dev/null,
// such as a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	if err != nil || st.Mode()&os.ModeCharDevice == 0 {
		return false
	}
	null, err := os.Stat(os.DevNull)
	return err != nil || !os.SameFile(st, null)
}

// ctxReadSeeker fails reads once ctx is done, so that a long merge stops on
// Ctrl-C.
type ctxReadSeeker struct {
	ctx context.Context
	rs  io.ReadSeeker
}

func (c *ctxReadSeeker) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.rs.Read(p)
}

func (c *ctxReadSeeker) Seek(off int64, whence int) (int64, error) { return c.rs.Seek(off, whence) }
