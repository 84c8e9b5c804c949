package main

import (
	"bufio"
	"fmt"
	"io"
	"path/filepath"

	"github.com/spf13/cobra"

	"nsprof/analyze"
	"nsprof/export"
	"nsprof/internal/textsafe"
	nsreport "nsprof/report"
)

// exportOptions are the settings of `nsprof export`.
type exportOptions struct {
	// Input is the capture's path; Output the file to write, "" or "-"
	// for standard output.
	Input, Output string
	Force         bool
	Format        export.Format
	View          analyze.ViewOptions
	Export        export.Options
	// Value names the sample type the export weighs by
	// ([analyze.Profile.ValueIndex]); "" for the number of samples.
	// --memory sets it to --memory-value's type (alloc_space).
	Value string
	// Partial accepts a damaged capture, as report's Partial does.
	Partial bool
	// Addresses gives each unnamed address a function of its own
	// ([analyze.LoadOptions.Addresses]).
	Addresses bool
	// Gmon is the file a gmon.out profiles (--dso PATH with --format
	// gmon).
	Gmon string
}

func newExportCmd() *cobra.Command {
	var (
		opts     exportOptions
		sel      selectFlags
		format   string
		memory   bool
		memValue string
		input    string
	)
	cmd := &cobra.Command{
		Use:   "export [flags] FILE --format pprof|speedscope|folded|svg|gmon",
		Short: "Write the samples of a capture for pprof, speedscope, flame graph tools or gprof",
		Long: `Export writes the stack samples of a capture in another tool's format:

  pprof       gzipped profile.proto for go tool pprof and Pyroscope: mappings
              with build-ids, functions, locations, and the labels pid, tid,
              nspid, comm and container on every sample
  speedscope  speedscope's JSON file format, one sampled profile per thread
              (per group with --by), samples in time order
  folded      one line per distinct stack, "root;...;leaf COUNT", for
              flamegraph.pl and inferno
  svg         a standalone flame graph; click Search (or press /) to
              highlight functions by regular expression
  gmon        glibc's gmon.out (version 1) of the file --dso PATH, shared
              library or executable, for an unpatched gprof PATH gmon.out:
              a histogram of the CPU samples in the file (4 bytes of code a
              bin, prof_rate the recording's sampling frequency) and the
              call arcs of record --calls, in PATH's link-time addresses
              wherever it was loaded; PATH is read now, its build-id checked
              against the capture's

The output goes to standard output unless -o names a file (not overwritten
without -f); pprof is never written to a terminal. The filters, --hide-kernel,
--focus and --focus-dso select and shape samples exactly as in nsprof report,
so the numbers agree. --invert puts leaves at the root (not for pprof, which
has its own views); --by adds a root frame per group to folded stacks and the
SVG, and makes one speedscope profile per group. Folded stacks start with the
process's comm by default, as stackcollapse-perf.pl writes them
("server;main;work 5"); --no-process-root or --by none leaves it out.

--value TYPE weighs stacks by a sample type of the capture: samples (the
default), cpu (nanoseconds, when the recording says its period), of a
record --off-cpu capture off_cpu (--off-cpu) or wall (--wall), or of a
--memprof capture alloc_space, alloc_objects, inuse_space, inuse_objects,
temp_space or temp_objects ("in use": allocated while recording and live
at its end; "temp": freed by the allocating thread before its next
allocation), with every filter and grouping; pprof then carries the types
measured together with TYPE (samples and cpu, or the six allocation
types: a Go heap profile's four first), TYPE the default.

--memory exports the allocations of a --memprof capture instead of its CPU
samples: a shorthand for --value alloc_space (--memory-value names another
allocation type).

A damaged capture is exported up to the damage, then nsprof names the file,
the byte offset and what is damaged, and exits with status 1; --partial
accepts it with a warning and status 0.

With --format gmon, --dso names the file to profile (not a name to
match): the samples whose innermost user frame is in a mapping of PATH
(by build-id, else by base name) make the histogram; the arcs whose callee
and call site are both in it are written, others counted on standard
error (gprof keeps no arc from outside the file: their callees show as
<spontaneous>). Every process mapping the file adds to the gmon.out.`,
		Example: `  nsprof export capture.syscap --format pprof -o cpu.pb.gz && go tool pprof -top cpu.pb.gz
  nsprof export capture.syscap --format speedscope -o profile.speedscope.json
  nsprof export capture.syscap --format folded --comm server | flamegraph.pl > server.svg
  nsprof export capture.syscap --format svg --hide-kernel --by process -o flame.svg
  nsprof export calls.nsprof --format gmon --dso ./libfoo.so -o gmon.out && gprof -b ./libfoo.so gmon.out
  nsprof export mem.syscap --memory --format pprof -o heap.pb.gz && go tool pprof -sample_index=inuse_space -top heap.pb.gz
  nsprof export mem.syscap --memory --memory-value alloc_objects --format folded | flamegraph.pl > allocs.svg
  nsprof export mem.syscap --value inuse_space --by thread --format speedscope -o leaks.json`,
		Args: usageArgs(cobra.MaximumNArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			var err error
			if opts.Input, err = captureArg(cmd, args, input, ""); err != nil {
				return err
			}
			if format == "" {
				return usagef(cmd, "--format is required: pprof, speedscope, folded, svg or gmon")
			}
			if opts.Format, err = export.ParseFormat(format); err != nil {
				return usagef(cmd, "--format: %v", err)
			}
			if opts.View, opts.Export.By, err = sel.parse(cmd); err != nil {
				return err
			}
			if opts.Format == export.FormatGmon {
				if err := opts.gmonFlags(cmd, sel.value != "" || memory); err != nil {
					return err
				}
				return exportCapture(opts, cmd.OutOrStdout(), cmd.ErrOrStderr())
			}
			if cmd.Flags().Changed("by") && opts.Export.By == analyze.GroupNone {
				opts.Export.NoProcessRoot = true // --by none
			}
			if cmd.Flags().Changed("memory-value") && !memory {
				return usagef(cmd, "--memory-value needs --memory")
			}
			opts.Value, opts.Addresses = sel.value, sel.addresses
			if memory {
				if opts.Value, err = memoryValue(opts.Value, memValue); err != nil {
					return usagef(cmd, "%v", err)
				}
			}
			if opts.Format == export.FormatPprof && (opts.View.Invert || opts.Export.By != analyze.GroupNone) {
				return usagef(cmd, "pprof takes neither --invert nor --by: use pprof's own views and its labels pid, tid, comm and container")
			}
			if opts.Format == export.FormatPprof {
				// pprof has inlined functions as lines of a location.
				opts.View.Inline = false
			}
			if opts.Export.Title == "" {
				opts.Export.Title = filepath.Base(opts.Input)
			}
			return exportCapture(opts, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	f := cmd.Flags()
	sel.add(f)
	f.StringVar(&format, "format", "", "output `FORMAT`: pprof, speedscope, folded, svg or gmon (required)")
	f.StringVarP(&input, "input", "i", "", "read the capture `FILE` (as perf report -i; or give FILE as the argument)")
	f.StringVarP(&opts.Output, "output", "o", "", "write to `OUT` instead of standard output")
	f.BoolVarP(&opts.Force, "force", "f", false, "overwrite OUT if it exists")
	f.BoolVar(&sel.view.Invert, "invert", false, "put the leaf functions at the root (bottom-up)")
	f.BoolVar(&opts.Export.NoProcessRoot, "no-process-root", false, "folded: start stacks at their root function, without the comm frame (as --by none)")
	f.StringVar(&opts.Export.Title, "title", "", "name the profile `TITLE` (default: the capture's file name)")
	f.IntVar(&opts.Export.Width, "width", 1200, "SVG width in `PIXELS`")
	f.BoolVar(&memory, "memory", false, "export the allocations of a --memprof capture instead of the CPU samples (--value alloc_space)")
	f.BoolVar(&opts.Partial, "partial", false, "accept a damaged capture: export the frames before the damage with a warning and exit 0 (default: exit 1)")
	f.StringVar(&memValue, "memory-value", "alloc_space", "with --memory, weigh stacks by `VALUE`: alloc_space, alloc_objects, inuse_space, inuse_objects, temp_space or temp_objects (pprof: the default sample type)")
	return cmd
}

// exportCapture runs `nsprof export`.
func exportCapture(opts exportOptions, stdout, stderr io.Writer) (err error) {
	defer analyze.LimitMemory(regularSize(opts.Input))()
	// The output first: a file that exists (without -f), or a terminal
	// for a binary format, is refused before the capture is read (a
	// 60 s capture takes a second to load).
	out := stdout
	if opts.Output == "" || opts.Output == "-" {
		if (opts.Format == export.FormatPprof || opts.Format == export.FormatGmon) && isTerminal(stdout) {
			return fmt.Errorf("refusing to write a %v profile to a terminal: redirect standard output or use -o FILE", opts.Format)
		}
	} else {
		f, oerr := createOutput(opts.Output, opts.Force, 0o644)
		if oerr != nil {
			return oerr
		}
		defer func() { // sets the named result err
			if err != nil {
				f.Discard() // a failed export leaves no partial file
			} else if cerr := f.Close(); cerr != nil {
				err = fmt.Errorf("%s: %w", opts.Output, cerr)
			}
		}()
		out = f
	}
	prog := progressLine(stderr)
	defer prog.Clear()
	p, loadErr := analyze.LoadFile(opts.Input, analyze.LoadOptions{NoAllocations: stackValue(opts.Value), Addresses: opts.Addresses, Progress: prog.Report, FewerGCs: true})
	prog.Clear()
	if p == nil {
		return loadErr
	}
	alloc := analyze.IsAllocType(opts.Value)
	done := fmt.Sprintf("exported the %d samples before the damage", p.Totals[0])
	if alloc {
		done = "exported the allocations before the damage"
	}
	if loadErr != nil && opts.Partial {
		fmt.Fprintf(stderr, "nsprof: warning: %s; %s\n", textsafe.Escape(loadErr.Error()), done)
	}
	for _, w := range p.Warnings {
		fmt.Fprintf(stderr, "nsprof: warning: %s: %s\n", textsafe.Escape(opts.Input), textsafe.Escape(w))
	}
	if alloc && !p.HasAllocations() {
		return fmt.Errorf("%s has no allocations (record with nsprof record --memprof)", opts.Input)
	}
	if opts.View.Value, err = p.ValueIndex(opts.Value); err != nil {
		return fmt.Errorf("--value: %s: %w", opts.Input, err)
	}
	prog.Report(progressView, 0, 0)
	v, err := p.View(opts.View)
	prog.Clear()
	if err != nil {
		return err
	}
	bw := bufio.NewWriterSize(out, 256*1024)
	if opts.Format == export.FormatGmon {
		if err := exportGmon(bw, v, opts, stderr); err != nil {
			return err
		}
	} else if err := export.Generate(bw, v, opts.Format, opts.Export); err != nil {
		return fmt.Errorf("exporting %s as %v: %w", opts.Input, opts.Format, err)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("writing %s: %w", opts.Format, err)
	}
	switch {
	case alloc && len(v.Samples) == 0:
		fmt.Fprintf(stderr, "nsprof: warning: %s: no allocations selected\n", opts.Input)
	case len(v.Samples) == 0:
		hint := ""
		if why := nsreport.NoneSelected(p, opts.View.Filter); why != "" {
			hint = ": " + why
		} else if p.Allocations > 0 {
			hint = "; it has allocations: export them with --memory"
		}
		fmt.Fprintf(stderr, "nsprof: warning: %s: no samples selected%s\n", opts.Input, hint)
	}
	if loadErr != nil && !opts.Partial {
		return damageError(loadErr, done)
	}
	return nil
}
