package export

import (
	"bufio"
	"io"
	"slices"
	"strconv"
	"strings"

	"nsprof/analyze"
	"nsprof/internal/textsafe"
)

// noStack names the only frame of samples whose stack had no address.
const noStack = "[no stack]"

// foldedName makes a function name safe for the folded format: ';'
// separates frames, so it becomes ':', and a newline ends a line, so line
// breaks and every other control character are escaped as the report
// escapes them (\n, \x1b): flame graph tools copy names into SVG, where
// XML forbids most controls, and onto terminals.
func foldedName(s string) string {
	return strings.ReplaceAll(textsafe.Escape(s), ";", ":")
}

// writeFolded writes one line per distinct path, "root;…;leaf count",
// sorted. The root is the group's (o.By), by default the process's comm
// as stackcollapse-perf.pl writes it ("server;main;work 5"); none with
// o.NoProcessRoot.
func writeFolded(w io.Writer, v *analyze.View, o Options) error {
	by := o.By
	if by == analyze.GroupNone && !o.NoProcessRoot {
		by = analyze.GroupComm
	}
	paths := collect(v, by)
	lines := make([]string, 0, len(paths))
	var b strings.Builder
	merged := make(map[string]int, len(paths))
	for _, p := range paths {
		b.Reset()
		if p.root != "" {
			b.WriteString(foldedName(p.root))
		}
		for _, fn := range p.funcs {
			if b.Len() > 0 {
				b.WriteByte(';')
			}
			b.WriteString(foldedName(v.Funcs[fn].Name))
		}
		if len(p.funcs) == 0 {
			if b.Len() > 0 {
				b.WriteByte(';')
			}
			b.WriteString(noStack)
		}
		k := b.String()
		if _, ok := merged[k]; !ok {
			lines = append(lines, k) // distinct stacks may fold to one name path
		}
		merged[k] += p.n
	}
	slices.Sort(lines)
	bw := bufio.NewWriterSize(w, 64*1024)
	for _, l := range lines {
		bw.WriteString(l)
		bw.WriteByte(' ')
		bw.WriteString(strconv.Itoa(merged[l]))
		bw.WriteByte('\n')
	}
	return bw.Flush()
}
