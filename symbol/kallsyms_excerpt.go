package symbol

import (
	"bytes"
	"slices"
)

// Excerpt returns the lines of the kallsyms text that name addrs: for
// each address a symbol holds, that symbol's line and the next kept
// symbol's (where it ends), in address order, each once, as they are in
// the text; and the first kept symbol's line, so that the excerpt is
// never empty. [NewKallsyms] of the excerpt names each of addrs as k
// does, and so does Sysprof's reader of an embedded kallsyms, which ends a
// symbol at the next line's address: a capture can embed the excerpt of
// the addresses it holds rather than the whole text (5 MB, 1 MB
// compressed, for a few hundred kernel functions sampled).
func (k *Kallsyms) Excerpt(addrs []uint64) []byte {
	keep := []int{0}
	for _, a := range addrs {
		i := k.find(a)
		if i < 0 {
			continue
		}
		if _, ok := k.Lookup(a); !ok {
			continue // past the bound of the symbol before it
		}
		keep = append(keep, i)
		if i+1 < k.Len() {
			keep = append(keep, i+1)
		}
	}
	slices.Sort(keep)
	keep = slices.Compact(keep)
	var out []byte
	for _, i := range keep {
		out = append(out, k.line(k.sym(i).off)...)
		out = append(out, '\n')
	}
	return out
}

// line returns the line of the text holding offset off, without its
// newline.
func (k *Kallsyms) line(off uint32) []byte {
	start := bytes.LastIndexByte(k.data[:off], '\n') + 1
	end := len(k.data)
	if i := bytes.IndexByte(k.data[off:], '\n'); i >= 0 {
		end = int(off) + i
	}
	return bytes.TrimRight(k.data[start:end], "\r")
}
