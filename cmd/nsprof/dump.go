package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"nsprof/capture"
	"nsprof/internal/textsafe"
)

// dumpOptions are the settings of `nsprof dump`.
type dumpOptions struct {
	// Input is the capture's path, or "-" for standard input.
	Input string
	// Output is the file to write, or "" or "-" for standard output.
	Output string
	// Force replaces an existing Output file.
	Force bool
	// Types keeps only frames of these types; empty keeps all.
	Types []capture.FrameType
	// PIDs keeps only frames whose frame PID is listed; empty keeps all.
	PIDs []int32
	// Summary prints counts per frame type instead of frames.
	Summary bool
	// Files lists the embedded files instead of frames.
	Files bool
	// Extract writes the contents of this embedded file instead of frames.
	Extract string
}

func newDumpCmd() *cobra.Command {
	var (
		opts        dumpOptions
		types, pids []string
	)
	cmd := &cobra.Command{
		Use:   "dump [flags] FILE",
		Short: "Print the frames of a capture as text",
		Long: `Dump prints the capture's header on one line, then every frame on one line:
time since the capture's start in seconds, CPU, PID, type and the frame's fields.
FILE "-" reads standard input.

On a damaged capture, dump prints every frame before the damage, then reports
the byte offset of the damage and exits with status 1.`,
		Example: `  nsprof dump capture.syscap
  nsprof dump --type MARK,LOG --pid 1234 capture.syscap
  nsprof dump --summary capture.syscap
  nsprof dump --files capture.syscap
  nsprof dump --extract /proc/cpuinfo -o cpuinfo.txt capture.syscap`,
		Args: usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Input = args[0]
			for _, s := range types {
				t, err := capture.ParseFrameType(s)
				if err != nil {
					return usagef(cmd, "--type: %v", err)
				}
				opts.Types = append(opts.Types, t)
			}
			for _, s := range pids {
				pid, err := strconv.ParseInt(s, 10, 32)
				if err != nil {
					return usagef(cmd, "--pid: %q is not a process id", s)
				}
				opts.PIDs = append(opts.PIDs, int32(pid))
			}
			if err := opts.check(); err != nil {
				return usagef(cmd, "%v", err)
			}
			return dump(cmd.Context(), opts, cmd.InOrStdin(), cmd.OutOrStdout())
		},
	}
	f := cmd.Flags()
	f.StringSliceVarP(&types, "type", "t", nil, "print only frames of these `TYPE`s (names such as SAMPLE, MARK, CTRDEF, or numbers; repeatable)")
	f.StringSliceVarP(&pids, "pid", "p", nil, "print only frames whose frame `PID` is listed (repeatable)")
	f.BoolVarP(&opts.Summary, "summary", "s", false, "print frame counts and sizes per type instead of frames")
	f.BoolVar(&opts.Files, "files", false, "list embedded files (path, size, complete, gz) instead of frames")
	f.StringVarP(&opts.Extract, "extract", "x", "", "write the contents of the embedded file at `PATH` (decompressing PATH.gz when PATH is not stored)")
	f.StringVarP(&opts.Output, "output", "o", "", "write to `FILE` instead of standard output")
	f.BoolVarP(&opts.Force, "force", "f", false, "overwrite FILE if it exists")
	return cmd
}

// check rejects combinations of options that make no sense.
func (o *dumpOptions) check() error {
	var modes []string
	if o.Summary {
		modes = append(modes, "--summary")
	}
	if o.Files {
		modes = append(modes, "--files")
	}
	if o.Extract != "" {
		modes = append(modes, "--extract")
	}
	if len(modes) > 1 {
		return fmt.Errorf("%s cannot be combined", strings.Join(modes, " and "))
	}
	if (o.Files || o.Extract != "") && (len(o.Types) > 0 || len(o.PIDs) > 0) {
		return fmt.Errorf("--type and --pid do not apply to %s", modes[0])
	}
	return nil
}

// dump runs `nsprof dump`: it reads the capture from opts.Input (stdin when
// "-") and writes to opts.Output (stdout when empty or "-").
func dump(ctx context.Context, opts dumpOptions, stdin io.Reader, stdout io.Writer) (err error) {
	name, in := opts.Input, stdin
	if opts.Input == "-" {
		name = "stdin"
	} else {
		f, err := os.Open(opts.Input)
		if err != nil {
			return err
		}
		defer f.Close()
		in = f
	}
	r, err := capture.NewReaderWithOptions(in, capture.ReaderOptions{AllowUnknown: true})
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	out := stdout
	if opts.Output != "" && opts.Output != "-" {
		f, cerr := createOutput(opts.Output, opts.Force, 0o640)
		if cerr != nil {
			return cerr
		}
		defer func() { // sets the named result err
			if cerr := f.Close(); err == nil && cerr != nil {
				err = cerr
			}
		}()
		out = f
	}
	src := &frames{ctx: ctx, r: r, name: name}
	bw := bufio.NewWriterSize(out, 256*1024)
	switch {
	case opts.Files:
		err = listFiles(src, bw)
	case opts.Extract != "":
		err = extractFile(src, bw, opts.Extract)
	case opts.Summary:
		err = summarize(src, bw, newFrameFilter(opts))
	default:
		err = dumpFrames(src, bw, newFrameFilter(opts))
	}
	// Flush what was read before any damage, then report the damage.
	if ferr := bw.Flush(); err == nil {
		err = ferr
	}
	return err
}

// frames reads the frames of a capture for dump.
type frames struct {
	ctx  context.Context
	r    *capture.Reader
	name string // the input, named in errors
	n    int
}

// next returns the next frame, or io.EOF at the clean end of the capture.
// Read errors name the input. Cancellation is checked every 4096 frames.
func (s *frames) next() (capture.Frame, error) {
	if s.n++; s.n&0xfff == 0 {
		if err := s.ctx.Err(); err != nil {
			return nil, err
		}
	}
	f, err := s.r.Next()
	if err != nil && err != io.EOF {
		return nil, fmt.Errorf("%s: %w", s.name, err)
	}
	return f, err
}

// frameFilter selects frames by type and frame PID.
type frameFilter struct {
	types [256]bool
	pids  map[int32]bool
}

func newFrameFilter(o dumpOptions) *frameFilter {
	ff := &frameFilter{}
	if len(o.Types) == 0 {
		for i := range ff.types {
			ff.types[i] = true
		}
	}
	for _, t := range o.Types {
		ff.types[t] = true
	}
	if len(o.PIDs) > 0 {
		ff.pids = make(map[int32]bool, len(o.PIDs))
		for _, p := range o.PIDs {
			ff.pids[p] = true
		}
	}
	return ff
}

func (ff *frameFilter) match(f capture.Frame) bool {
	return ff.types[f.Type()] && (ff.pids == nil || ff.pids[f.Head().PID])
}

// writeHeader prints the capture's header on one line.
func writeHeader(w io.Writer, h capture.FileHeader) error {
	dur := "unknown"
	if h.EndTime >= h.StartTime {
		dur = seconds(h.EndTime-h.StartTime) + "s"
	}
	order := "little-endian"
	if h.BigEndian {
		order = "big-endian"
	}
	_, err := fmt.Fprintf(w, "capture time=%s start=%d end=%d duration=%s %s\n", textsafe.Escape(h.CaptureTime), h.StartTime, h.EndTime, dur, order)
	return err
}

// seconds formats ns as seconds with 9 decimals.
func seconds(ns int64) string {
	if ns < 0 {
		return "-" + seconds(-ns)
	}
	return fmt.Sprintf("%d.%09d", ns/1e9, ns%1e9)
}

// relSeconds formats ns as seconds with a sign, as frame times are dumped.
func relSeconds(ns int64) string {
	if ns < 0 {
		return seconds(ns)
	}
	return "+" + seconds(ns)
}

// dumpFrames prints the header, then one line per frame selected by ff.
func dumpFrames(src *frames, w *bufio.Writer, ff *frameFilter) error {
	hdr := src.r.Header()
	if err := writeHeader(w, hdr); err != nil {
		return err
	}
	d := capture.Dumper{Start: hdr.StartTime}
	var line []byte
	for {
		f, err := src.next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if !ff.match(f) {
			if f.Type() == capture.TypeCounterDefine {
				line = d.Append(line[:0], f) // learn the counter types for CTRSET lines
			}
			continue
		}
		line = append(d.Append(line[:0], f), '\n')
		if _, err := w.Write(line); err != nil {
			return err
		}
	}
}

// summarize prints the header, then frame counts and sizes per type of the
// frames selected by ff. On damage it summarizes the frames before it.
func summarize(src *frames, w *bufio.Writer, ff *frameFilter) error {
	var (
		counts, sizes [256]int64
		frames, bytes int64
		first, last   int64
		pids          = make(map[int32]bool)
		readErr       error
	)
	for {
		off := src.r.Offset()
		f, err := src.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			if src.ctx.Err() != nil {
				return err
			}
			readErr = err
			break
		}
		if !ff.match(f) {
			continue
		}
		h := f.Head()
		if frames == 0 {
			first, last = h.Time, h.Time
		}
		frames++
		bytes += src.r.Offset() - off
		counts[f.Type()]++
		sizes[f.Type()] += src.r.Offset() - off
		first, last = min(first, h.Time), max(last, h.Time)
		if h.PID > 0 {
			pids[h.PID] = true
		}
	}
	hdr := src.r.Header()
	if err := writeHeader(w, hdr); err != nil {
		return err
	}
	fmt.Fprintf(w, "%-14s %10s %12s\n", "TYPE", "FRAMES", "BYTES")
	for t, c := range counts {
		if c > 0 {
			fmt.Fprintf(w, "%-14s %10d %12d\n", capture.FrameType(t), c, sizes[t])
		}
	}
	fmt.Fprintf(w, "%-14s %10d %12d\n", "total", frames, bytes)
	if frames > 0 {
		fmt.Fprintf(w, "pids %d, frame times %ss .. %ss\n", len(pids), relSeconds(first-hdr.StartTime), relSeconds(last-hdr.StartTime))
	}
	return readErr
}

// listFiles prints the files embedded in the capture. On damage it lists
// the files seen before it.
func listFiles(src *frames, w io.Writer) error {
	fs, err := readFiles(src, func(string) bool { return true }, nil)
	if src.ctx.Err() != nil {
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "PATH\tSIZE\tCOMPLETE\tGZ")
	for _, e := range fs.List() {
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\n", textsafe.Escape(e.Path), e.Size, yesNo(e.Complete), yesNo(strings.HasSuffix(e.Path, ".gz")))
	}
	if ferr := tw.Flush(); err == nil {
		err = ferr
	}
	return err
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// extractFile writes the contents of the embedded file at path, or of
// path+".gz" decompressed when path itself is not stored, as Sysprof looks
// files up. A file complete before damage is still written.
func extractFile(src *frames, w io.Writer, path string) error {
	want := func(p string) bool { return p == path || p == path+".gz" }
	fs, readErr := readFiles(src, want, func(fs *capture.Files) bool {
		// Stop early once the preferred, exact path is complete.
		for _, e := range fs.List() {
			if e.Path == path {
				return e.Complete
			}
		}
		return false
	})
	if src.ctx.Err() != nil {
		return readErr
	}
	var found *capture.EmbeddedFile
	for _, e := range fs.List() {
		if e.Path == path || (found == nil && e.Path == path+".gz") {
			found = &e
		}
	}
	switch {
	case found == nil && readErr != nil:
		return fmt.Errorf("embedded file %s: not found before damage: %w", path, readErr)
	case found == nil:
		return fmt.Errorf("embedded file %s: not found (see --files)", path)
	case !found.Complete && readErr != nil:
		return fmt.Errorf("embedded file %s: incomplete: %w", found.Path, readErr)
	case !found.Complete:
		return fmt.Errorf("embedded file %s: incomplete (no last chunk)", found.Path)
	}
	data, err := fs.Lookup(path)
	if err != nil {
		return err
	}
	if _, err := w.Write(data); err != nil {
		return err
	}
	return readErr
}

// readFiles collects the FILE_CHUNK frames whose path satisfies want, until
// the end of the capture, or until done reports true after a last chunk.
func readFiles(src *frames, want func(string) bool, done func(*capture.Files) bool) (*capture.Files, error) {
	fs := &capture.Files{}
	for {
		f, err := src.next()
		if err == io.EOF {
			return fs, nil
		}
		if err != nil {
			return fs, err
		}
		c, ok := f.(*capture.FileChunk)
		if !ok || !want(c.Path) {
			continue
		}
		fs.Add(c)
		if done != nil && c.IsLast && done(fs) {
			return fs, nil
		}
	}
}
