package symbol

import "nsprof/internal/pageread"

// maxGoPages bounds the pages of a Go line table kept while its lines are
// looked up (2 MiB). The table is read from the file as the lines of
// sampled addresses are asked for: held whole, the Go compiler's 8 MB
// table was the largest thing the recorder held when its heap peaked, at
// the end of a recording over a compile loop, next to another file's
// DWARF. One function's lines touch some ten pages (the function table,
// its record, its pcvalue tables, its file and function names); asked in
// address order, the records and pcvalue tables are read in order, and
// what is looked at again (the function table, the file tables, the
// names: some 350 pages of the compiler's) stays.
const maxGoPages = 512

// goSpan is a table of a Go line table (or of go:func.*): the bytes from
// start to the end of src, as the pclntab's tables run to the end of the
// pclntab.
type goSpan struct {
	src   *pageread.Source
	start uint64
}

// spanOf returns the table of src from start; empty when start is past
// the end.
func spanOf(src *pageread.Source, start uint64) goSpan { return goSpan{src, start} }

// len returns the length of the table.
func (t goSpan) len() uint64 {
	if t.src == nil || t.start >= t.src.Len() {
		return 0
	}
	return t.src.Len() - t.start
}

// at returns up to want bytes of the table from off, as
// [pageread.Source.At].
func (t goSpan) at(off, want uint64) []byte {
	if off >= t.len() {
		return nil
	}
	return t.src.At(t.start+off, want)
}

// window calls read with the bytes of t from off, as
// [pageread.Source.Window].
func (t goSpan) window(off uint64, read func([]byte) bool) {
	if off >= t.len() {
		read(nil)
		return
	}
	t.src.Window(t.start+off, read)
}
