package web

import (
	"cmp"
	"slices"
	"strconv"
	"sync"

	"nsprof/analyze"
)

// valueIndex is what the selections of one sample type share, built at
// its first use: the whole capture's view (inlined calls as frames) and
// its call trees with every stack's place in them, so that a selection's
// tree costs a pass over its samples and the trees' nodes rather than
// over every frame of every stack, as [analyze.Profile.Tree] does.
type valueIndex struct {
	v    *analyze.View
	down *trie
	// up is built at the first inverted selection.
	up     *trie
	upOnce sync.Once
	// file is the source file of each function, from the first of its
	// frames that has one; "" when none has.
	file []string
}

// trie is the call tree of every stack of a view, the nodes of a path
// shared: parents precede their children.
type trie struct {
	parent []int32
	fn     []analyze.FuncID
	// leaf is the node each stack ends at.
	leaf []int32
}

// newTrie builds the top-down (or, with bottomUp, the callers) tree of
// v's stacks.
func newTrie(v *analyze.View, bottomUp bool) *trie {
	t := &trie{parent: []int32{-1}, fn: []analyze.FuncID{-1}, leaf: make([]int32, v.NumStacks())}
	type key struct {
		parent int32
		fn     analyze.FuncID
	}
	index := make(map[key]int32)
	for id := range t.leaf {
		st := v.Stack(analyze.StackID(id))
		cur := int32(0)
		for i := range st {
			fr := st[len(st)-1-i] // outermost first
			if bottomUp {
				fr = st[i]
			}
			k := key{cur, v.Frames[fr].Func}
			n, ok := index[k]
			if !ok {
				n = int32(len(t.parent))
				index[k] = n
				t.parent = append(t.parent, cur)
				t.fn = append(t.fn, k.fn)
			}
			cur = n
		}
		t.leaf[id] = cur
	}
	return t
}

// index returns the index of sample type vi, built at its first use.
func (s *Server) index(vi int) (*valueIndex, error) {
	s.mu.RLock()
	x := s.indexes[vi]
	s.mu.RUnlock()
	if x != nil {
		return x, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if x := s.indexes[vi]; x != nil {
		return x, nil
	}
	v, err := s.p.View(analyze.ViewOptions{Value: vi, Inline: true})
	if err != nil {
		return nil, err
	}
	x = &valueIndex{v: v, down: newTrie(v, false), file: make([]string, len(v.Funcs))}
	for i := range v.Frames {
		if f := &v.Frames[i]; f.Loc.File != "" && x.file[f.Func] == "" {
			x.file[f.Func] = f.Loc.File
		}
	}
	s.indexes[vi] = x
	return x, nil
}

// selectSamples returns the samples of x's view f keeps, as
// [analyze.Profile.Select] selects them.
func (x *valueIndex) selectSamples(f analyze.Filter) ([]analyze.Sample, error) {
	return x.v.SelectFrom(x.v.Samples, f)
}

// tree returns the call tree of samples of x's view, as
// [analyze.Profile.Tree] builds it, without the nodes whose total is at
// most minTotal (a share of the root's), and how many there are.
func (x *valueIndex) tree(samples []analyze.Sample, bottomUp bool, share float64) (root *analyze.Node, minTotal, hidden int) {
	t := x.down
	if bottomUp {
		x.upOnce.Do(func() { x.up = newTrie(x.v, true) })
		t = x.up
	}
	counts := make([]int64, x.v.NumStacks())
	vi := x.v.Selected()
	for i := range samples {
		counts[samples[i].Stack] += x.v.Value(&samples[i], vi)
	}
	self := make([]int64, len(t.parent))
	for id, c := range counts {
		if c != 0 {
			self[t.leaf[id]] += c
		}
	}
	total := slices.Clone(self)
	for n := len(total) - 1; n > 0; n-- {
		total[t.parent[n]] += total[n]
	}
	minTotal = int(float64(total[0]) * share)
	nodes := make([]*analyze.Node, len(t.parent))
	nodes[0] = &analyze.Node{Func: -1, Total: int(total[0]), Self: int(self[0])}
	for n := 1; n < len(t.parent); n++ {
		if total[n] == 0 {
			continue
		}
		par := nodes[t.parent[n]]
		if par == nil || int(total[n]) <= minTotal {
			hidden++
			continue
		}
		fn := &x.v.Funcs[t.fn[n]]
		nd := &analyze.Node{Func: t.fn[n], Name: fn.Name, DSO: fn.DSO, Kernel: fn.Kernel, Self: int(self[n]), Total: int(total[n])}
		nodes[n] = nd
		par.Children = append(par.Children, nd)
	}
	for _, nd := range nodes {
		if nd != nil && len(nd.Children) > 1 {
			slices.SortFunc(nd.Children, func(a, b *analyze.Node) int {
				return cmp.Or(cmp.Compare(b.Total, a.Total), cmp.Compare(a.Name, b.Name))
			})
		}
	}
	return nodes[0], minTotal, hidden
}

// sources returns where each function of fs spent its self value: the
// file:line of its frames with the most of it, or its file when it has
// none (or no line is known).
func (x *valueIndex) sources(samples []analyze.Sample, fs []analyze.FuncStat) []string {
	type key struct {
		fn   analyze.FuncID
		file string
		line int
	}
	want := make(map[analyze.FuncID]bool, len(fs))
	for _, f := range fs {
		want[f.Func] = f.Self > 0
	}
	self := map[key]int64{}
	vi := x.v.Selected()
	for i := range samples {
		st := x.v.Stack(samples[i].Stack)
		if len(st) == 0 {
			continue
		}
		fr := &x.v.Frames[st[0]]
		if want[fr.Func] && fr.Loc.File != "" {
			self[key{fr.Func, fr.Loc.File, fr.Loc.Line}] += x.v.Value(&samples[i], vi)
		}
	}
	best := map[analyze.FuncID]key{}
	bestW := map[analyze.FuncID]int64{}
	for k, w := range self {
		b, ok := best[k.fn]
		if !ok || w > bestW[k.fn] || w == bestW[k.fn] && (k.file < b.file || k.file == b.file && k.line < b.line) {
			best[k.fn], bestW[k.fn] = k, w
		}
	}
	out := make([]string, len(fs))
	for i, f := range fs {
		if b, ok := best[f.Func]; ok && b.line > 0 {
			out[i] = b.file + ":" + strconv.Itoa(b.line)
		} else {
			out[i] = x.file[f.Func]
		}
	}
	return out
}
