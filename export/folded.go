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
// sorted.
func writeFolded(w io.Writer, v *analyze.View, o Options) error {
	paths := collect(v, o.By)
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
