package export

import (
	"bufio"
	"io"
	"slices"
	"strconv"
	"strings"

	"nsprof/analyze"
)

// noStack names the only frame of samples whose stack had no address.
const noStack = "[no stack]"

// foldedName makes a function name safe for the folded format: ';'
// separates frames and a newline ends a line, so ';' becomes ':' and
// line breaks become spaces.
var foldedName = strings.NewReplacer(";", ":", "\n", " ", "\r", " ")

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
			b.WriteString(foldedName.Replace(p.root))
		}
		for _, fn := range p.funcs {
			if b.Len() > 0 {
				b.WriteByte(';')
			}
			b.WriteString(foldedName.Replace(v.Funcs[fn].Name))
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
