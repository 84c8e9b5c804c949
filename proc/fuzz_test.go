package proc

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"testing"

	"nsprof/internal/testutils"
)

// Seed corpora live in testdata/fuzz/<FuzzName>/. Every target checks that
// the parser does not panic, that an error is a *SyntaxError (a
// bytes.Reader never fails) and comes with the zero result, and where the
// format allows, that formatting a result and parsing it again gives the
// same result.

// fuzzParser is testutils.FuzzParser for this package's parsers.
func fuzzParser[T any](f *testing.F, parse func(io.Reader) (T, error), check func(*testing.T, []byte, T)) {
	testutils.FuzzParser(f, syntaxLine, parse, check)
}

// reparse is testutils.Reparse.
func reparse[T any](t *testing.T, v T, format func(T) string, parse func(io.Reader) (T, error)) {
	t.Helper()
	testutils.Reparse(t, v, format, parse)
}

func FuzzParseMaps(f *testing.F) {
	fuzzParser(f, ParseMaps, func(t *testing.T, _ []byte, maps []Mapping) {
		reparse(t, maps, formatMaps, ParseMaps)
	})
}

func formatMaps(maps []Mapping) string {
	var b strings.Builder
	for _, m := range maps {
		fmt.Fprintf(&b, "%08x-%08x %s %08x %02x:%02x %d", m.Start, m.End, m.Perms, m.Offset, m.Dev.Major, m.Dev.Minor, m.Inode)
		if m.Path != "" || m.Deleted {
			b.WriteString("     " + strings.ReplaceAll(m.Path, "\n", `\012`))
		}
		if m.Deleted {
			b.WriteString(deletedSuffix)
		}
		b.WriteByte('\n')
	}
	return b.String()
}

func FuzzParseStatus(f *testing.F) {
	fuzzParser(f, ParseStatus, func(t *testing.T, _ []byte, s Status) {
		for _, chain := range [][]int{s.NStgid, s.NSpid, s.NSpgid, s.NSsid} {
			if chain != nil && len(chain) == 0 {
				t.Fatalf("empty non-nil chain in %+v", s)
			}
		}
	})
}

func FuzzParseStat(f *testing.F) {
	fuzzParser(f, ParseStat, func(t *testing.T, data []byte, s Stat) {
		if !bytes.Contains(data, []byte("("+s.Comm+")")) {
			t.Fatalf("comm %q not found between parentheses", s.Comm)
		}
	})
}

func FuzzParseSystemStat(f *testing.F) {
	fuzzParser(f, ParseSystemStat, func(t *testing.T, _ []byte, s SystemStat) {
		if s.Total.CPU != -1 {
			t.Fatalf("total CPU = %d", s.Total.CPU)
		}
	})
}

func FuzzParseMeminfo(f *testing.F) {
	fuzzParser(f, ParseMeminfo, nil)
}

func FuzzParseDiskstats(f *testing.F) {
	fuzzParser(f, ParseDiskstats, nil)
}

func FuzzParseNetDev(f *testing.F) {
	fuzzParser(f, ParseNetDev, func(t *testing.T, _ []byte, stats []NetDevStat) {
		for _, s := range stats {
			if s.Name == "" || strings.ContainsAny(s.Name, ": \t") {
				t.Fatalf("bad interface name %q", s.Name)
			}
		}
	})
}

func FuzzParseCgroup(f *testing.F) {
	fuzzParser(f, ParseCgroup, func(t *testing.T, _ []byte, cgs []Cgroup) {
		reparse(t, cgs, func(cgs []Cgroup) string {
			var b strings.Builder
			for _, c := range cgs {
				fmt.Fprintf(&b, "%d:%s:%s\n", c.HierarchyID, strings.Join(c.Controllers, ","), c.Path)
			}
			return b.String()
		}, ParseCgroup)
	})
}

func FuzzParseCmdline(f *testing.F) {
	fuzzParser(f, ParseCmdline, func(t *testing.T, data []byte, args []string) {
		if got := strings.Join(args, "\x00"); got != strings.TrimSuffix(string(data), "\x00") {
			t.Fatalf("args %q do not rebuild %q", args, data)
		}
	})
}

func FuzzParseNamespaceLink(f *testing.F) {
	f.Fuzz(func(t *testing.T, link string) {
		kind, ino, err := ParseNamespaceLink(link)
		if err != nil {
			if kind != "" || ino != 0 {
				t.Fatalf("error %v with result %q, %d", err, kind, ino)
			}
			return
		}
		k2, i2, err := ParseNamespaceLink(fmt.Sprintf("%s:[%d]", kind, ino))
		if err != nil || k2 != kind || i2 != ino {
			t.Fatalf("round trip of %q: %q, %d, %v", link, k2, i2, err)
		}
	})
}

func FuzzParseSmaps(f *testing.F) {
	fuzzParser(f, ParseSmaps, func(t *testing.T, _ []byte, maps []MappingMemory) {
		reparse(t, maps, formatSmaps, ParseSmaps)
	})
}

func formatSmaps(maps []MappingMemory) string {
	var b strings.Builder
	for _, m := range maps {
		b.WriteString(formatMaps([]Mapping{m.Mapping}))
		fmt.Fprintf(&b, "Rss: %d kB\nAnonymous: %d kB\nSwap: %d kB\n", m.Rss>>10, m.Anonymous>>10, m.Swap>>10)
	}
	return b.String()
}
