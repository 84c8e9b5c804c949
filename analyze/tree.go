package analyze

import (
	"cmp"
	"slices"
)

// TreeOptions configures [Profile.Tree]. The zero value is a full top-down
// tree.
type TreeOptions struct {
	// BottomUp builds the callers tree: the root's children are the
	// functions samples were taken in (their Total is their self time),
	// and each node's children are its callers. Default top-down: the
	// root's children are the outermost callers.
	BottomUp bool
	// MaxDepth keeps nodes up to this depth below the root (1 keeps only
	// the root's children); deeper samples still count in their
	// ancestors' totals. 0 means no limit.
	MaxDepth int
	// MinPercent drops nodes whose Total is below this percentage of the
	// root's. 0 keeps all.
	MinPercent float64
}

// Node is one node of a call tree: a function reached through the path
// from the root.
type Node struct {
	Func FuncID `json:"-"`
	// Name and DSO name the function; both are empty at the root.
	Name   string `json:"function"`
	DSO    string `json:"dso"`
	Kernel bool   `json:"kernel,omitempty"`
	// Self counts the samples that end at this node: in a top-down tree,
	// those whose leaf is this function reached this way; in a bottom-up
	// tree, those whose outermost frame is this node. Total counts every
	// sample through the node. At the root, Total is the number of
	// samples.
	Self  int `json:"self"`
	Total int `json:"total"`
	// Children are sorted by Total, largest first.
	Children []*Node `json:"children,omitempty"`
}

type nodeKey struct {
	parent int32
	fn     FuncID
}

// Tree builds the call tree of samples.
func (p *Profile) Tree(samples []Sample, o TreeOptions) *Node {
	counts := p.stackCounts(samples)
	nodes := []Node{{Func: -1}}
	parent := []int32{-1}
	index := make(map[nodeKey]int32)
	path := make([]FuncID, 0, 64)
	for id, c := range counts {
		if c == 0 {
			continue
		}
		nodes[0].Total += int(c)
		st := p.Stack(StackID(id))
		path = path[:0]
		if o.BottomUp {
			for _, fr := range st {
				path = append(path, p.Frames[fr].Func)
			}
		} else {
			for i := len(st) - 1; i >= 0; i-- {
				path = append(path, p.Frames[st[i]].Func)
			}
		}
		if o.MaxDepth > 0 && len(path) > o.MaxDepth {
			path = path[:o.MaxDepth]
		}
		cur := int32(0)
		for _, fn := range path {
			k := nodeKey{cur, fn}
			n, ok := index[k]
			if !ok {
				n = int32(len(nodes))
				index[k] = n
				nodes = append(nodes, Node{Func: fn})
				parent = append(parent, cur)
			}
			nodes[n].Total += int(c)
			cur = n
		}
		if len(path) == len(st) {
			nodes[cur].Self += int(c)
		}
	}
	// Link children to parents; drop nodes below MinPercent.
	minTotal := 0
	if o.MinPercent > 0 {
		minTotal = int(o.MinPercent / 100 * float64(nodes[0].Total))
		if float64(minTotal) < o.MinPercent/100*float64(nodes[0].Total) {
			minTotal++ // round up: Total must reach the percentage
		}
	}
	ptrs := make([]*Node, len(nodes))
	ptrs[0] = &nodes[0]
	for i := 1; i < len(nodes); i++ {
		n := &nodes[i]
		if n.Total < minTotal || ptrs[parent[i]] == nil {
			continue // parents precede children, so dropped subtrees stay dropped
		}
		fn := &p.Funcs[n.Func]
		n.Name, n.DSO, n.Kernel = fn.Name, fn.DSO, fn.Kernel
		ptrs[i] = n
		par := ptrs[parent[i]]
		par.Children = append(par.Children, n)
	}
	for _, n := range ptrs {
		if n != nil && len(n.Children) > 1 {
			slices.SortFunc(n.Children, func(a, b *Node) int {
				if c := cmp.Compare(b.Total, a.Total); c != 0 {
					return c
				}
				return cmp.Compare(a.Name, b.Name)
			})
		}
	}
	return &nodes[0]
}

// Walk calls fn for n and every node below it, depth first in child
// order, with the node's depth (0 for n). It stops descending below a
// node for which fn returns false.
func (n *Node) Walk(fn func(n *Node, depth int) bool) {
	n.walk(fn, 0)
}

func (n *Node) walk(fn func(*Node, int) bool, depth int) {
	if !fn(n, depth) {
		return
	}
	for _, c := range n.Children {
		c.walk(fn, depth+1)
	}
}
