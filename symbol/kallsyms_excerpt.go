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
func (k *Kallsyms) Excerpt(addrs []uint64) []byte { return k.ExcerptDropping(addrs, nil) }

// ExcerptDropping is [Kallsyms.Excerpt], going through the index and the
// text once, in address order, and calling drop (when not nil) each time
// it has gone some thousand symbols further, for a caller that maps them
// from a file to let go of the pages behind (see LookupSorted).
func (k *Kallsyms) ExcerptDropping(addrs []uint64, drop func()) []byte {
	keep := []int{0}
	w := k.walker(drop)
	for _, a := range sortedCopy(addrs) {
		i := w.find(a)
		if i < 0 || a > k.lastOf(i) {
			continue // below the first symbol, or past the bound of the one before it
		}
		keep = append(keep, i)
		if i+1 < k.Len() {
			keep = append(keep, i+1)
		}
	}
	slices.Sort(keep)
	keep = slices.Compact(keep)
	var out []byte
	dropped := 0
	for _, i := range keep {
		out = append(out, k.line(k.sym(i).off)...)
		out = append(out, '\n')
		if drop != nil && i-dropped >= dropEverySyms {
			drop()
			dropped = i
		}
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
