package export

import (
	"nsprof/analyze"
)

// weighted is one distinct path of a view with its sample count.
type weighted struct {
	// root is the group's root frame, or "" without grouping.
	root string
	// funcs are the path's functions, root first (leaf first when the
	// view is inverted).
	funcs []analyze.FuncID
	n     int
}

// collect returns the distinct paths of v's samples with their counts,
// grouped by by. The cost is in proportion to the distinct stacks.
func collect(v *analyze.View, by analyze.GroupBy) []weighted {
	var out []weighted
	groups := v.Group(v.Samples, by)
	for i := range groups {
		g := &groups[i]
		root := ""
		if by != analyze.GroupNone {
			root = groupLabel(by, g)
		}
		for id, c := range v.StackCounts(g.Samples) {
			if c == 0 {
				continue
			}
			out = append(out, weighted{root: root, funcs: v.Path(analyze.StackID(id), nil), n: int(c)})
		}
	}
	return out
}
