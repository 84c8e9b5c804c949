package export

import (
	"bufio"
	"cmp"
	"fmt"
	"hash/fnv"
	"io"
	"slices"
	"strings"
	"unicode/utf8"

	"nsprof/analyze"
)

// SVG layout, in pixels.
const (
	svgRow     = 16  // height of a frame row
	svgPad     = 10  // left and right margin
	svgTop     = 50  // above the frames: title, search
	svgBottom  = 24  // below the frames: details line
	svgCharW   = 7.2 // width of a 12px monospace character
	svgMinWide = 0.1 // narrower frames are not drawn
)

// flameNode is a node of the flame graph: a function reached through one
// path, or a group's root frame, or the root.
type flameNode struct {
	name, dso    string
	kernel, grp  bool
	total, depth int
	children     []int32
}

type flameKey struct {
	parent int32
	fn     analyze.FuncID
	label  string
}

// buildFlame merges the view's paths into a tree; nodes[0] is the root.
func buildFlame(v *analyze.View, paths []weighted) []flameNode {
	nodes := []flameNode{{name: "all"}}
	index := make(map[flameKey]int32)
	child := func(parent int32, k flameKey, mk func() flameNode) int32 {
		k.parent = parent
		n, ok := index[k]
		if !ok {
			n = int32(len(nodes))
			index[k] = n
			nd := mk()
			nd.depth = nodes[parent].depth + 1
			nodes = append(nodes, nd)
			nodes[parent].children = append(nodes[parent].children, n)
		}
		return n
	}
	for _, p := range paths {
		nodes[0].total += p.n
		cur := int32(0)
		if p.root != "" {
			cur = child(cur, flameKey{fn: -1, label: p.root}, func() flameNode { return flameNode{name: p.root, grp: true} })
			nodes[cur].total += p.n
		}
		for _, fn := range p.funcs {
			cur = child(cur, flameKey{fn: fn}, func() flameNode {
				f := &v.Funcs[fn]
				return flameNode{name: f.Name, dso: f.DSO, kernel: f.Kernel}
			})
			nodes[cur].total += p.n
		}
	}
	for i := range nodes {
		slices.SortFunc(nodes[i].children, func(a, b int32) int { return cmp.Compare(nodes[a].name, nodes[b].name) })
	}
	return nodes
}

// writeSVG writes a flame graph: the root at the bottom, callees above
// their callers (callers above callees for an inverted view), each
// frame's width its share of the samples, siblings in name order. Every
// name is XML-escaped; the inline script only reads attributes.
func writeSVG(w io.Writer, v *analyze.View, o Options) error {
	unit := "samples"
	if vi := v.Selected(); vi != 0 {
		unit = v.SampleTypes[vi].Unit
		if unit == "count" {
			unit = v.SampleTypes[vi].Type
		}
	}
	return renderFlame(w, buildFlame(v, collect(v, o.By)), v.Invert, unit, o)
}

// renderFlame draws the flame graph of nodes (nodes[0] is the root), each
// frame's total counted in unit; inverted puts the root at the top.
func renderFlame(w io.Writer, nodes []flameNode, inverted bool, unit string, o Options) error {
	depth := 0
	for i := range nodes {
		depth = max(depth, nodes[i].depth)
	}
	width := float64(o.Width)
	height := svgTop + (depth+1)*svgRow + svgBottom
	total := max(1, nodes[0].total)
	scale := (width - 2*svgPad) / float64(total)
	bw := bufio.NewWriterSize(w, 256*1024)
	fmt.Fprintf(bw, `<?xml version="1.0" encoding="UTF-8" standalone="no"?>
<svg version="1.1" xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="monospace" font-size="12">
<style>g.f:hover rect { stroke: #000; stroke-width: 0.5; } g.f, #search, #unzoom { cursor: pointer; } #unzoom.off { display: none; }</style>
<script type="text/ecmascript"><![CDATA[%s]]></script>
<rect x="0" y="0" width="100%%" height="100%%" fill="#f8f8f8"/>
<text x="%d" y="24" font-size="17" text-anchor="middle">%s</text>
<text id="unzoom" class="off" x="%d" y="24" onclick="unzoom()">Reset Zoom</text>
<text id="search" x="%d" y="24" text-anchor="end" onclick="search()">Search</text>
<text id="matched" x="%d" y="%d" text-anchor="end"></text>
<text id="details" x="%d" y="%d"> </text>
`, o.Width, height, o.Width, height, svgScript, o.Width/2, xmlEscape(o.Title), svgPad,
		o.Width-svgPad, o.Width-svgPad, height-8, svgPad, height-8)
	// Depth-first with explicit x offsets.
	type item struct {
		n int32
		x float64
	}
	stack := []item{{0, svgPad}}
	for len(stack) > 0 {
		it := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		nd := &nodes[it.n]
		wide := float64(nd.total) * scale
		if wide < svgMinWide {
			continue
		}
		y := svgTop + (depth-nd.depth)*svgRow
		if inverted {
			y = svgTop + nd.depth*svgRow
		}
		label := nd.name
		if nd.dso != "" {
			label += " [" + nd.dso + "]"
		}
		fmt.Fprintf(bw, `<g class="f" data-name="%s" onclick="zoom(this)" onmouseover="details(this)" onmouseout="details(null)"><title>%s: %d %s, %.2f%%</title><rect x="%.1f" y="%d" width="%.1f" height="%d" rx="2" fill="%s"/>`,
			xmlEscape(nd.name), xmlEscape(label), nd.total, unit, 100*float64(nd.total)/float64(total),
			it.x, y, wide, svgRow-1, nodeColor(nd, it.n == 0))
		if text := fitText(nd.name, wide); text != "" {
			fmt.Fprintf(bw, `<text x="%.1f" y="%d">%s</text>`, it.x+3, y+svgRow-4, xmlEscape(text))
		}
		bw.WriteString("</g>\n")
		// Push children right to left so they come out left to right.
		x := it.x
		xs := make([]float64, len(nd.children))
		for i, c := range nd.children {
			xs[i] = x
			x += float64(nodes[c].total) * scale
		}
		for i := len(nd.children) - 1; i >= 0; i-- {
			stack = append(stack, item{nd.children[i], xs[i]})
		}
	}
	bw.WriteString("</svg>\n")
	return bw.Flush()
}

// fitText returns name cut to fit a frame wide pixels wide, ending in
// ".." when cut, or "" when not even three characters fit.
func fitText(name string, wide float64) string {
	n := int((wide-6)/svgCharW + 1e-9)
	if n < 3 {
		return ""
	}
	if utf8.RuneCountInString(name) <= n {
		return name
	}
	r := []rune(name)
	return string(r[:n-2]) + ".."
}

// nodeColor picks a frame's fill: warm colors for user code, orange for
// the kernel, blue for group frames, grey for the root; the shade comes
// from a hash of the name so a function keeps its color.
func nodeColor(nd *flameNode, root bool) string {
	h := fnv.New32a()
	h.Write([]byte(nd.name))
	x := h.Sum32()
	switch {
	case root:
		return "rgb(200,200,200)"
	case nd.grp:
		return fmt.Sprintf("rgb(%d,%d,%d)", 120+x%40, 160+x>>8%40, 220+x>>16%35)
	case nd.kernel:
		return fmt.Sprintf("rgb(%d,%d,%d)", 230+x%25, 120+x>>8%50, x>>16%40)
	}
	return fmt.Sprintf("rgb(%d,%d,%d)", 205+x%50, x>>8%230, x>>16%55)
}

// xmlEscape returns s as XML character data or attribute value: & < > "
// and ' as references, invalid UTF-8 and characters XML 1.0 does not
// allow (controls other than tab, newline and carriage return; U+FFFE,
// U+FFFF) as U+FFFD.
func xmlEscape(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		switch {
		case r == utf8.RuneError && size == 1:
			b.WriteRune(utf8.RuneError)
		case r == '&':
			b.WriteString("&amp;")
		case r == '<':
			b.WriteString("&lt;")
		case r == '>':
			b.WriteString("&gt;")
		case r == '"':
			b.WriteString("&quot;")
		case r == '\'':
			b.WriteString("&apos;")
		case r == '\t' || r == '\n' || r == '\r':
			fmt.Fprintf(&b, "&#%d;", r) // kept as written, even in attributes
		case r < 0x20 || r == 0xFFFE || r == 0xFFFF || (r >= 0xD800 && r <= 0xDFFF):
			b.WriteRune(utf8.RuneError)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// svgScript searches frames by regular expression (click "Search" or
// press "/" or Ctrl-F), highlights the matches and prints the share of
// the samples they cover, shows a frame's details under the graph when
// hovered, and zooms on a clicked frame as flamegraph.pl does: the frame
// and its descendants are stretched to the full width (their labels
// refitted), its ancestors span the full width, every other frame is
// hidden; "Reset Zoom", Escape or a click on the root zooms out. It reads
// names only from attributes and writes them only through textContent.
// Its charW and pad are svgCharW and svgPad (TestSVGScriptConstants).
const svgScript = `
var hl = [], charW = 7.2, pad = 10; // svgCharW and svgPad
// orig returns the frame's rect's x and width as drawn, kept in
// data-x and data-w once it is zoomed.
function orig(r) {
	if (!r.hasAttribute("data-x")) { r.setAttribute("data-x", r.getAttribute("x")); r.setAttribute("data-w", r.getAttribute("width")); }
	return [+r.getAttribute("data-x"), +r.getAttribute("data-w")];
}
function fit(g, x, w) {
	var t = g.querySelector("text"), name = g.getAttribute("data-name");
	if (!t) { t = document.createElementNS("http://www.w3.org/2000/svg", "text"); t.setAttribute("y", +g.querySelector("rect").getAttribute("y") + 12); g.appendChild(t); }
	var n = Math.floor((w - 6) / charW + 1e-9), s = "";
	if (n >= 3) s = name.length <= n ? name : name.substring(0, n - 2) + "..";
	t.setAttribute("x", (x + 3).toFixed(1));
	t.textContent = s;
}
function place(g, x, w) {
	var r = g.querySelector("rect");
	r.setAttribute("x", x.toFixed(1));
	r.setAttribute("width", w.toFixed(1));
	fit(g, x, w);
	g.style.display = "";
}
function zoom(g) {
	var gs = document.querySelectorAll("g.f"), z = orig(g.querySelector("rect")), full = orig(gs[0].querySelector("rect"))[1];
	var x0 = z[0], w0 = z[1], scale = full / w0, eps = 0.05;
	for (var i = 0; i < gs.length; i++) {
		var o = orig(gs[i].querySelector("rect"));
		if (o[0] <= x0 + eps && o[0] + o[1] >= x0 + w0 - eps) place(gs[i], pad, full);
		else if (o[0] >= x0 - eps && o[0] + o[1] <= x0 + w0 + eps) place(gs[i], pad + (o[0] - x0) * scale, o[1] * scale);
		else gs[i].style.display = "none";
	}
	document.getElementById("unzoom").setAttribute("class", g === gs[0] ? "off" : "");
}
function unzoom() { zoom(document.querySelector("g.f")); }
function reset() {
	for (var i = 0; i < hl.length; i++) hl[i].setAttribute("fill", hl[i].getAttribute("data-fill"));
	hl = [];
	document.getElementById("matched").textContent = "";
}
function search() {
	var term = prompt("Search (regular expression)", "");
	if (term === null) return;
	reset();
	if (term === "") return;
	var re;
	try { re = new RegExp(term); } catch (e) { alert(e); return; }
	var gs = document.querySelectorAll("g.f"), spans = [], all = 0;
	for (var i = 0; i < gs.length; i++) {
		var r = gs[i].querySelector("rect"), o = orig(r), x = o[0], w = o[1];
		if (i === 0) all = w;
		if (!re.test(gs[i].getAttribute("data-name"))) continue;
		r.setAttribute("data-fill", r.getAttribute("fill"));
		r.setAttribute("fill", "rgb(224,64,224)");
		hl.push(r);
		spans.push([x, x + w]);
	}
	spans.sort(function (a, b) { return a[0] - b[0]; });
	var covered = 0, end = -1;
	for (var j = 0; j < spans.length; j++) {
		var s = spans[j];
		if (s[1] > end) { covered += s[1] - Math.max(s[0], end); end = s[1]; }
	}
	document.getElementById("matched").textContent = "Matched: " + (all > 0 ? 100 * covered / all : 0).toFixed(1) + "%";
}
function details(g) {
	document.getElementById("details").textContent = g ? g.querySelector("title").textContent : " ";
}
window.addEventListener("keydown", function (e) {
	if (e.key === "/" || ((e.ctrlKey || e.metaKey) && e.key === "f")) { e.preventDefault(); search(); }
	if (e.key === "Escape") unzoom();
});
`
