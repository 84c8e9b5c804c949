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
	// locs are the source lines ("file:line", or the file when the
	// line is not known) of the frames, locs[0] ""; loc is each frame's
	// index in it.
	locs []string
	loc  []int32
	// inlined is the first frame of v that is a call inlined at another
	// ([analyze.ViewOptions.Inline] adds them after the profile's).
	inlined analyze.FrameID
	// class is each frame's class: its function, whether it is an
	// inlined call and its loc, which are classes[class].
	class   []uint32
	classes []frameClass
}

// frameClass is what a trie tells frames apart by.
type frameClass struct {
	fn      analyze.FuncID
	inlined bool
	loc     int32
}

// trie is the call tree of every stack of a view, the nodes of a path
// shared: parents precede their children. A node is a function called
// from its parent, or inlined in it: the same function both ways is two
// nodes. Each node has line nodes below it, one per source line of its
// frames on each path (of the parent's line node), which a selection's
// tree sums into it and which say where its time went.
type trie struct {
	parent  []int32
	fn      []analyze.FuncID
	inlined []bool
	// line nodes: their parent line node, their node and their loc
	// ([valueIndex.locs]).
	lparent, lnode, lloc []int32
	// leaf is the line node each stack ends at.
	leaf []int32
}

// newTrie builds the top-down (or, with bottomUp, the callers) tree of
// x.v's stacks.
func newTrie(x *valueIndex, bottomUp bool) *trie {
	v := x.v
	t := &trie{parent: []int32{-1}, fn: []analyze.FuncID{-1}, inlined: []bool{false},
		lparent: []int32{-1}, lnode: []int32{0}, lloc: []int32{0}, leaf: make([]int32, v.NumStacks())}
	// Keys of 8 bytes: a line node and a frame class, a node and a
	// function with the inlined bit (maps of such keys are the fastest).
	index := make(map[uint64]int32, v.NumStacks())
	lines := make(map[uint64]int32, v.NumStacks())
	for id := range t.leaf {
		st := v.Stack(analyze.StackID(id))
		cur := int32(0) // a line node
		for i := range st {
			fr := st[len(st)-1-i] // outermost first
			if bottomUp {
				fr = st[i]
			}
			c := x.class[fr]
			lk := uint64(cur)<<32 | uint64(c)
			n, ok := lines[lk]
			if !ok {
				fc := &x.classes[c]
				k := uint64(t.lnode[cur])<<32 | uint64(fc.fn)<<1
				if fc.inlined {
					k |= 1
				}
				node, ok := index[k]
				if !ok {
					node = int32(len(t.parent))
					index[k] = node
					t.parent = append(t.parent, t.lnode[cur])
					t.fn = append(t.fn, fc.fn)
					t.inlined = append(t.inlined, fc.inlined)
				}
				n = int32(len(t.lparent))
				lines[lk] = n
				t.lparent = append(t.lparent, cur)
				t.lnode = append(t.lnode, node)
				t.lloc = append(t.lloc, fc.loc)
			}
			cur = n
		}
		t.leaf[id] = cur
	}
	return t
}

// flameNode is a node of a selection's call tree, as [analyze.Node] is,
// with where in the source its time went and whether the call was
// inlined.
type flameNode struct {
	Name   string `json:"function"`
	DSO    string `json:"dso"`
	Kernel bool   `json:"kernel,omitempty"`
	// Inlined says the function was inlined in its parent (in a
	// bottom-up tree: its parent, the callee, was inlined in it).
	Inlined bool `json:"inlined,omitempty"`
	// Source is the file:line of its frames through which most of its
	// total went: where it was when sampled, or where it called its
	// child; the file when no line is known, "" when no file is.
	Source string `json:"source,omitempty"`
	// Lines counts the distinct source lines of its frames.
	Lines    int          `json:"lines,omitempty"`
	Self     int          `json:"self"`
	Total    int          `json:"total"`
	Children []*flameNode `json:"children,omitempty"`
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
	x = &valueIndex{v: v, file: make([]string, len(v.Funcs)), locs: []string{""}, loc: make([]int32, len(v.Frames)),
		inlined: analyze.FrameID(len(s.p.Frames)), class: make([]uint32, len(v.Frames))}
	type fileLine struct {
		file string
		line int
	}
	locs := map[fileLine]int32{}
	classes := map[frameClass]uint32{}
	for i := range v.Frames {
		f := &v.Frames[i]
		if f.Loc != nil && f.Loc.File != "" {
			if x.file[f.Func] == "" {
				x.file[f.Func] = f.Loc.File
			}
			fl := fileLine{f.Loc.File, max(0, f.Loc.Line)}
			id, ok := locs[fl]
			if !ok {
				id = int32(len(x.locs))
				locs[fl] = id
				src := fl.file
				if fl.line > 0 {
					src += ":" + strconv.Itoa(fl.line)
				}
				x.locs = append(x.locs, src)
			}
			x.loc[i] = id
		}
		fc := frameClass{f.Func, analyze.FrameID(i) >= x.inlined, x.loc[i]}
		c, ok := classes[fc]
		if !ok {
			c = uint32(len(x.classes))
			classes[fc] = c
			x.classes = append(x.classes, fc)
		}
		x.class[i] = c
	}
	x.down = newTrie(x, false)
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
func (x *valueIndex) tree(samples []analyze.Sample, bottomUp bool, share float64) (root *flameNode, minTotal, hidden int) {
	t := x.down
	if bottomUp {
		x.upOnce.Do(func() { x.up = newTrie(x, true) })
		t = x.up
	}
	counts := make([]int64, x.v.NumStacks())
	vi := x.v.Selected()
	for i := range samples {
		counts[samples[i].Stack] += x.v.Value(&samples[i], vi)
	}
	// The line nodes' self and total, then the nodes'.
	lself := make([]int64, len(t.lparent))
	for id, c := range counts {
		if c != 0 {
			lself[t.leaf[id]] += c
		}
	}
	ltotal := slices.Clone(lself)
	for n := len(ltotal) - 1; n > 0; n-- {
		ltotal[t.lparent[n]] += ltotal[n]
	}
	self := make([]int64, len(t.parent))
	total := make([]int64, len(t.parent))
	for n, w := range ltotal {
		if w != 0 {
			self[t.lnode[n]] += lself[n]
			total[t.lnode[n]] += w
		}
	}
	minTotal = int(float64(total[0]) * share)
	nodes := make([]*flameNode, len(t.parent))
	nodes[0] = &flameNode{Total: int(total[0]), Self: int(self[0])}
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
		nd := &flameNode{Name: fn.Name, DSO: fn.DSO, Kernel: fn.Kernel, Inlined: t.inlined[n], Self: int(self[n]), Total: int(total[n])}
		nodes[n] = nd
		par.Children = append(par.Children, nd)
	}
	// Each shown node's heaviest source line.
	type nodeLoc struct{ node, loc int32 }
	byLine := map[nodeLoc]int64{}
	for n, w := range ltotal {
		if w != 0 && n > 0 && nodes[t.lnode[n]] != nil {
			byLine[nodeLoc{t.lnode[n], t.lloc[n]}] += w
		}
	}
	// A known line before none, then the heaviest, then the first.
	best := make(map[int32]nodeLoc, len(byLine))
	for k, w := range byLine {
		if k.loc == 0 {
			continue
		}
		nodes[k.node].Lines++
		b, ok := best[k.node]
		if !ok || w > byLine[b] || w == byLine[b] && k.loc < b.loc {
			best[k.node] = k
		}
	}
	for n, k := range best {
		nodes[n].Source = x.locs[k.loc]
	}
	for _, nd := range nodes {
		if nd != nil && len(nd.Children) > 1 {
			slices.SortFunc(nd.Children, func(a, b *flameNode) int {
				return cmp.Or(cmp.Compare(b.Total, a.Total), cmp.Compare(a.Name, b.Name), compareBool(a.Inlined, b.Inlined))
			})
		}
	}
	return nodes[0], minTotal, hidden
}

// compareBool orders false before true.
func compareBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
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
