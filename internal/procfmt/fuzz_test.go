package procfmt

import (
	"fmt"
	"io"
	"strings"
	"testing"

	"nsprof/internal/testutils"
)

// Seed corpora live in testdata/fuzz/<FuzzName>/. Every target checks that
// the parser does not panic, that an error is a *SyntaxError (a
// bytes.Reader never fails) and comes with the zero result, and that
// formatting a result and parsing it again gives the same result.

// fuzzParser is testutils.FuzzParser for this package's parsers.
func fuzzParser[T any](f *testing.F, parse func(io.Reader) (T, error), check func(*testing.T, []byte, T)) {
	testutils.FuzzParser(f, syntaxLine, parse, check)
}

// reparse is testutils.Reparse.
func reparse[T any](t *testing.T, v T, format func(T) string, parse func(io.Reader) (T, error)) {
	t.Helper()
	testutils.Reparse(t, v, format, parse)
}

func FuzzParseMountInfo(f *testing.F) {
	fuzzParser(f, ParseMountInfo, func(t *testing.T, _ []byte, mounts []Mount) {
		reparse(t, mounts, formatMountInfo, ParseMountInfo)
	})
}

func formatMountInfo(mounts []Mount) string {
	var b strings.Builder
	for _, m := range mounts {
		fmt.Fprintf(&b, "%d %d %s %s %s %s", m.ID, m.ParentID, m.Dev, escapeOctal(m.Root, " \t\n\\"),
			escapeOctal(m.MountPoint, " \t\n\\"), formatMountOptions(m.Options))
		for _, o := range m.Optional {
			b.WriteString(" " + o)
		}
		fmt.Fprintf(&b, " - %s %s %s\n", escapeOctal(m.FSType, " \t\n\\"), escapeOctal(m.Source, " \t\n\\"),
			formatMountOptions(m.SuperOptions))
	}
	return b.String()
}

func formatMountOptions(opts MountOptions) string {
	s := make([]string, len(opts))
	for i, o := range opts {
		s[i] = escapeOctal(o.Key, ",= \t\n\\")
		if o.Value != "" || o.Key == "" { // keep a lone "=" apart from an empty list
			s[i] += "=" + escapeOctal(o.Value, ", \t\n\\")
		}
	}
	return strings.Join(s, ",")
}

// escapeOctal escapes the bytes in chars as the kernel does, as \ooo.
func escapeOctal(s, chars string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if strings.IndexByte(chars, s[i]) >= 0 {
			fmt.Fprintf(&b, `\%03o`, s[i])
		} else {
			b.WriteByte(s[i])
		}
	}
	return b.String()
}

func FuzzParseMounts(f *testing.F) {
	fuzzParser(f, ParseMounts, func(t *testing.T, _ []byte, entries []MountEntry) {
		reparse(t, entries, func(entries []MountEntry) string {
			var b strings.Builder
			for _, e := range entries {
				fmt.Fprintf(&b, "%s %s %s %s %d %d\n", escapeOctal(e.Source, " \t\n\\"), escapeOctal(e.MountPoint, " \t\n\\"),
					escapeOctal(e.FSType, " \t\n\\"), formatMountOptions(e.Options), e.Freq, e.PassNo)
			}
			return b.String()
		}, ParseMounts)
	})
}
