package main

import (
	"fmt"
	"io"
	"path/filepath"

	"github.com/spf13/cobra"

	"nsprof/analyze"
	"nsprof/export"
	"nsprof/internal/textsafe"
	"nsprof/symbol"
)

// gmonFlags checks the flags of `export --format gmon`: --dso names the
// file to profile, not a DSO name the samples must match (the file's
// samples and arcs are chosen by its mappings); the flags that weigh or
// shape stacks otherwise are refused, as gmon.out has no stacks.
func (opts *exportOptions) gmonFlags(cmd *cobra.Command, value bool) error {
	opts.Gmon = opts.View.Filter.DSO
	opts.View.Filter.DSO = ""
	if opts.Gmon == "" {
		return usagef(cmd, "--format gmon needs --dso PATH: the shared library or executable to profile, as gprof reads it")
	}
	if value {
		return usagef(cmd, "--format gmon takes no --value, --memory, --off-cpu, --wall or --blocking: it writes the CPU samples and the calls")
	}
	if opts.View.Invert || cmd.Flags().Changed("by") {
		return usagef(cmd, "--format gmon takes neither --invert nor --by")
	}
	// The calls samples and the CPU samples together, each frame as
	// recorded (inline expansion adds frames of no address).
	opts.View.AllKinds, opts.View.Inline, opts.View.Value = true, false, 0
	return nil
}

// exportGmon writes the gmon.out of opts.Gmon and says on stderr what it
// holds and what it left out.
func exportGmon(w io.Writer, v *analyze.View, opts exportOptions, stderr io.Writer) error {
	f, err := symbol.Open(opts.Gmon)
	if err != nil {
		return fmt.Errorf("--dso: %w", err)
	}
	defer f.Close()
	o := export.GmonOptions{File: f, Path: opts.Gmon}
	if real, err := filepath.EvalSymlinks(opts.Gmon); err == nil && filepath.Base(real) != filepath.Base(opts.Gmon) {
		o.Names = append(o.Names, filepath.Base(real))
	}
	st, err := export.Gmon(w, v, o)
	if err != nil {
		return fmt.Errorf("exporting %s as gmon.out of %s: %w", opts.Input, opts.Gmon, err)
	}
	name := textsafe.Escape(opts.Gmon)
	fmt.Fprintf(stderr, "nsprof: gmon.out of %s: %d samples at %d Hz in %d bins of %d bytes over [%#x, %#x), %d arcs of %d calls; processes: %d\n",
		name, st.Samples, st.Rate, st.Bins, st.BinBytes, st.Low, st.High, st.Arcs, st.Calls, st.Processes)
	if v.Event != "" && v.Event != "cpu-clock" && v.Event != "task-clock" {
		fmt.Fprintf(stderr, "nsprof: warning: the samples are of %s, not a clock: gprof's seconds are samples / %d, an estimate\n", textsafe.Escape(v.Event), st.Rate)
	}
	if st.Samples == 0 && st.Calls == 0 {
		fmt.Fprintf(stderr, "nsprof: warning: %s: no sample or call in %s\n", textsafe.Escape(opts.Input), name)
	}
	if st.Outside > 0 {
		fmt.Fprintf(stderr, "nsprof: warning: %d samples in mappings of %s at offsets no executable segment of it loads: left out\n", st.Outside, name)
	}
	if st.ForeignCalls > 0 {
		fmt.Fprintf(stderr, "nsprof: warning: %d calls (%d arcs) into %s from call sites outside it left out: gprof keeps no arc from outside the file, and shows their callees as <spontaneous>\n", st.ForeignCalls, st.ForeignArcs, name)
	}
	if len(st.Mismatched) > 0 {
		fmt.Fprintf(stderr, "nsprof: warning: %d samples and %d calls of other files named as %s left out (another build-id): %s\n",
			st.MismatchedSamples, st.MismatchedCalls, name, textsafe.Escape(fmt.Sprint(st.Mismatched)))
	}
	return nil
}
