package export

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"nsprof/analyze"
)

// Format is an export format.
type Format int

// Formats.
const (
	// FormatPprof is a gzipped profile.proto, as go tool pprof reads.
	FormatPprof Format = iota + 1
	// FormatSpeedscope is speedscope's JSON file format, one sampled profile
	// per thread (or per group, see [Options.By]).
	FormatSpeedscope
	// FormatFolded is one line per distinct stack, "root;…;leaf count", as
	// flamegraph.pl and inferno read.
	FormatFolded
	// FormatSVG is a standalone flame graph with an inline search script.
	FormatSVG
	// FormatGmon is glibc's gmon.out for GNU gprof, of one file: written
	// by [Gmon], not [Generate], since it needs the file.
	FormatGmon
)

var formatNames = map[Format]string{FormatPprof: "pprof", FormatSpeedscope: "speedscope", FormatFolded: "folded", FormatSVG: "svg", FormatGmon: "gmon"}

// String returns the format's name as [ParseFormat] accepts it.
func (f Format) String() string {
	if s, ok := formatNames[f]; ok {
		return s
	}
	return fmt.Sprintf("Format(%d)", int(f))
}

// ParseFormat accepts "pprof", "speedscope", "folded", "svg" or "gmon".
func ParseFormat(s string) (Format, error) {
	for f, name := range formatNames {
		if s == name {
			return f, nil
		}
	}
	return 0, fmt.Errorf("unknown export format %q (want pprof, speedscope, folded, svg or gmon)", s)
}

// Options configure [Generate]. The zero value is the default.
type Options struct {
	// Title names the profile: the speedscope file's name and the SVG's
	// heading, and a pprof comment. Default "nsprof".
	Title string
	// By groups the samples. Folded stacks and the SVG get one root frame
	// per group (such as "server [pid 10]"); speedscope gets one profile
	// per group, per thread when By is [analyze.GroupNone]. pprof ignores
	// it: its samples carry pid, tid, comm and container labels instead.
	// Folded stacks group by [analyze.GroupComm] when By is
	// [analyze.GroupNone], unless NoProcessRoot.
	By analyze.GroupBy
	// NoProcessRoot leaves out the process (comm) root frame folded
	// stacks have by default, as stackcollapse-perf.pl puts one, when By
	// is [analyze.GroupNone]: stacks then start at their root function.
	NoProcessRoot bool
	// Width is the SVG's width in pixels. Default 1200.
	Width int
}

func (o *Options) setDefaults() {
	if o.Title == "" {
		o.Title = "nsprof"
	}
	if o.Width <= 0 {
		o.Width = 1200
	}
}

// Generate writes the samples of v to w in format f. pprof ignores
// v.Invert (pprof has its own views); the other formats put the leaf at
// the root of an inverted view.
func Generate(w io.Writer, v *analyze.View, f Format, o Options) error {
	o.setDefaults()
	switch f {
	case FormatPprof:
		return writePprof(w, v, o)
	case FormatSpeedscope:
		return writeSpeedscope(w, v, o)
	case FormatFolded:
		return writeFolded(w, v, o)
	case FormatSVG:
		return writeSVG(w, v, o)
	case FormatGmon:
		return errors.New("export: gmon.out profiles one file: use Gmon")
	}
	return fmt.Errorf("export: %v", f)
}

// groupLabel names group g of a view for a root frame or profile name:
// "comm [pid N]", "comm [tid N]", a container label or a comm.
func groupLabel(by analyze.GroupBy, g *analyze.Group) string {
	comm := ""
	if g.Process != nil {
		comm = g.Process.Comm
	}
	switch by {
	case analyze.GroupProcess:
		return strings.TrimSpace(comm + " [pid " + g.Key + "]")
	case analyze.GroupThread:
		return strings.TrimSpace(comm + " [tid " + g.Key + "]")
	}
	return g.Key
}
