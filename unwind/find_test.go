package unwind

// find returns a copy of the row covering a, or nil: lookup, in the form
// the tests compare.
func (t *Table) find(a uint64) *row {
	r, ok := t.lookup(a)
	if !ok {
		return nil
	}
	return &r
}

// decodedRows returns function i's rows as Table rows, ended by a
// terminator at its end, nil when it has none.
func (g *goFuncs) decodedRows(i int) []row {
	gr := g.decode(i)
	if gr == nil {
		return nil
	}
	start := g.text + g.entry(i)
	out := make([]row, 0, len(gr)+1)
	for _, r := range gr {
		out = append(out, r.row(start))
	}
	return append(out, row{addr: g.text + g.end(i)})
}
