package analyze

import (
	"cmp"
	"fmt"
	"math"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"nsprof/capture"
)

// Symbolizer names the code at an address of a process. Frames are named
// from several goroutines at once: implementations must be safe for
// concurrent use.
type Symbolizer interface {
	// Symbolize returns the location of addr in process pid; kernel says
	// the address is a kernel one. It reports false when it cannot say.
	// pid may stand for an earlier image of a process, a frame of which
	// is at an address its later image maps too (see
	// [Profile.splitImages]): [Profile.Mapping] gives its mappings.
	Symbolize(pid int32, addr uint64, kernel bool) (Location, bool)
}

// Location names code. Function is required; the rest may be empty.
type Location struct {
	Function string
	// DSO is the object the code is in: a library nickname from a
	// symbol bundle, the base name of a mapped file, "[kernel]" or a
	// kernel module as "[name]".
	DSO  string
	File string
	Line int
	// Inline are the functions inlined at the address, innermost first,
	// each with the file and line reached in it; File and Line then say
	// where in Function the outermost of them was called. Empty when the
	// symbolizer knows of no inlining (or the code has none).
	Inline []Location
	// unnamed marks an inlined call whose function the debug
	// information did not name: Function is that of its caller.
	unnamed bool
}

// withFrames sets loc's file, line and inline functions from source
// frames, innermost first, the last being the function itself. The
// inline functions are in loc's DSO.
func (loc *Location) withFrames(fr []capture.SourceFrame) {
	if len(fr) == 0 {
		return
	}
	last := fr[len(fr)-1]
	loc.File, loc.Line = last.File, last.Line
	loc.Inline = nil
	if len(fr) > 1 {
		loc.Inline = make([]Location, 0, len(fr)-1)
	}
	for i, f := range fr[:len(fr)-1] {
		in := Location{Function: f.Function, DSO: loc.DSO, File: f.File, Line: f.Line}
		if in.Function == "" {
			// DWARF that names no function for the call (a reference
			// into a file not at hand, a broken chain): the code is
			// charged to the function it was inlined in, as without
			// inline frames, and counted.
			in.Function, in.unnamed = loc.Function, true
			for _, g := range fr[i+1:] {
				if g.Function != "" {
					in.Function = g.Function
					break
				}
			}
		}
		loc.Inline = append(loc.Inline, in)
	}
}

// UnnamedInline is the [Profile.SymbolStats] key that counts the inlined
// calls, among the frames named, whose function the debug information
// did not name: each carries the name of the function it was inlined in.
const UnnamedInline = "unnamed inlined"

// Chain tries its symbolizers in order and returns the first answer.
type Chain []Symbolizer

// Symbolize implements [Symbolizer].
func (c Chain) Symbolize(pid int32, addr uint64, kernel bool) (Location, bool) {
	loc, i := c.symbolize(pid, addr, kernel)
	return loc, i >= 0
}

// symbolize returns the answer and the index of the symbolizer that gave
// it (through nested chains, the innermost one), or -1.
func (c Chain) symbolize(pid int32, addr uint64, kernel bool) (Location, int) {
	for i, s := range c {
		if loc, ok := s.Symbolize(pid, addr, kernel); ok && loc.Function != "" {
			return loc, i
		}
	}
	return Location{}, -1
}

// String returns the names of the symbolizers joined by "+".
func (c Chain) String() string {
	var names []string
	for _, s := range c {
		names = append(names, symbolizerName(s))
	}
	return strings.Join(names, "+")
}

func symbolizerName(s Symbolizer) string {
	if n, ok := s.(fmt.Stringer); ok {
		return n.String()
	}
	return fmt.Sprintf("%T", s)
}

// flatten returns the symbolizers of nested chains in order.
func flatten(s Symbolizer, out []Symbolizer) []Symbolizer {
	if c, ok := s.(Chain); ok {
		for _, x := range c {
			out = flatten(x, out)
		}
		return out
	}
	if s == nil {
		return out
	}
	return append(out, s)
}

// BundleSymbolizer names addresses from a Sysprof __symbols__ bundle. The
// DSO of a user address is the base name of the file mapped there, or
// when there is none the record's tag (a nickname such as "libc", or
// nsprof's "JIT"), or the mapping's pseudo name. Sysprof's "In file PATH" records, its name
// for an address with no symbol, name nothing. A
// kernel address is named as [KallsymsSymbolizer] names it: a module's
// symbol ("name [ext4]") as the function with the module ("[ext4]") as
// DSO, the others with "[kernel]" (not the tag "Kernel"). Source
// lines and inline functions come from the profile's [Profile.Lines]
// when the recorder wrote them.
type BundleSymbolizer struct {
	t *capture.SymbolTable
	p *Profile
}

// NewBundleSymbolizer returns a symbolizer over t, taking DSO names from
// p's mappings when a record has no tag; p may be nil.
func NewBundleSymbolizer(t *capture.SymbolTable, p *Profile) *BundleSymbolizer {
	return &BundleSymbolizer{t: t, p: p}
}

// Symbolize implements [Symbolizer].
func (b *BundleSymbolizer) Symbolize(pid int32, addr uint64, kernel bool) (Location, bool) {
	if b == nil || b.t == nil {
		return Location{}, false
	}
	s, ok := b.t.Lookup(pid, addr)
	if !ok || s.Name == "" {
		if !kernel && b.p != nil {
			return b.p.imageLines(pid, addr)
		}
		return Location{}, false
	}
	if kernel {
		// Named by the recorder with the index the embedded kallsyms
		// is read with: the same location whichever names it.
		return kernelLocation(s.Name), true
	}
	if sysprofPlaceholder(s.Name) {
		// Sysprof's name for an address it found no symbol for: the
		// fallback's FILE+0xOFFSET says more, and other symbolizers
		// may know better.
		return Location{}, false
	}
	loc := Location{Function: s.Name, DSO: s.Tag}
	if b.p != nil {
		// A mapped file's name, as for every other frame: Sysprof's
		// tags are nicknames ("libc", "Gio") that would split one
		// library into two DSOs. Code in no file keeps its tag (nsprof's
		// "JIT" for perf-map names) when it has one.
		m := b.p.Mapping(pid, addr)
		if m != nil && (loc.DSO == "" || m.IsFile()) {
			loc.DSO = m.Base()
		}
		if fr, ok := b.p.sourceLines(pid, addr, m); ok {
			loc.withFrames(fr)
		}
	}
	return loc, true
}

// sourceLines returns the source frames [Profile.Lines] gives user
// address addr of process pid, in mapping m of it (nil when none): by
// the build-id of the mapped file and the offset in it, as the recorder
// describes each file's code once for every process mapping it, else by
// process and address.
func (p *Profile) sourceLines(pid int32, addr uint64, m *Mapping) ([]capture.SourceFrame, bool) {
	if m != nil && p.Lines.Files() > 0 {
		// (A mapping read twice, with and without its build-id, has
		// it: see resolveMaps.)
		if id := m.BuildID; id != "" {
			if fr, ok := p.Lines.LookupObject(id, addr-m.Start+m.Offset); ok {
				return fr, true
			}
		}
	}
	return p.Lines.Lookup(pid, addr)
}

// String returns "bundle".
func (b *BundleSymbolizer) String() string { return "bundle" }

// jitSymbolizer names addresses defined by JITMAP frames.
type jitSymbolizer map[uint64]string

func (j jitSymbolizer) Symbolize(pid int32, addr uint64, kernel bool) (Location, bool) {
	if kernel || !capture.IsJIT(addr) {
		return Location{}, false
	}
	n, ok := j[addr]
	return Location{Function: n, DSO: "[jit]"}, ok
}

func (jitSymbolizer) String() string { return "jit" }

// CaptureSymbolizer returns the symbolizers the capture itself provides,
// in the order they are tried: the __symbols__ bundle, JITMAP names and
// the embedded /proc/kallsyms for kernel addresses.
func (p *Profile) CaptureSymbolizer() Chain {
	var c Chain
	if p.Bundle != nil {
		c = append(c, NewBundleSymbolizer(p.Bundle, p))
	}
	if len(p.JIT) > 0 {
		c = append(c, jitSymbolizer(p.JIT))
	}
	if p.Kallsyms != nil {
		c = append(c, p.Kallsyms)
	}
	return c
}

// Symbolize names every frame with s and recomputes [Profile.Funcs] and
// [Profile.SymbolStats]. Addresses s cannot name get a fallback name:
// "FILE+0xOFFSET" (the file offset in the process's mapping containing
// the address, with FILE the mapping's base name as DSO), or
// "[unknown] 0xADDR". Their function is that name when
// [Profile.Addresses] is set, else the one [UnnamedFunction] gives
// all the unnamed addresses of their DSO. s may be nil.
//
// A frame stands for the same code in several processes (see [Frame]): s
// is asked its process and address, and when it names neither, the other
// processes' where the profile kept them (captures without nsprof's
// complete bundle, such as other recorders', and profiles loaded with
// [LoadOptions.NoSymbolize]: see [Profile.mergeSameCode]).
func (p *Profile) Symbolize(s Symbolizer) { p.symbolize(s, nil) }

// symbolize is Symbolize, telling prog (when set) how many frames of how
// many it has named, every few thousand.
//
// When a symbolizer of the chain is a [preparer], the frames are named in
// two passes: first by the symbolizers before it, noting the addresses
// that reach it; it is then told all of them at once, and the frames
// whose naming reached it are named again by the whole chain. Each frame
// gets the answer the whole chain gives it.
func (p *Profile) symbolize(s Symbolizer, prog func(done, total int)) {
	// The frames of inlined calls are made anew for the new names; the
	// room after the frames stays for them unless a view used it.
	if l := p.inline; l != nil {
		p.inline = &lazyInline{room: l.room}
	}
	chain := Chain(flatten(s, nil))
	names := make([]string, len(chain))
	counts := make([]int, len(chain))
	for i, x := range chain {
		names[i] = symbolizerName(x)
	}
	name := func(c Chain, f *Frame) (Location, int) {
		if f.Caller {
			return nameReturn(func(a uint64) (Location, int) { return c.symbolize(f.PID, a, f.Kernel) }, f.Addr)
		}
		return c.symbolize(f.PID, f.Addr, f.Kernel)
	}
	by := make([]int16, len(p.Frames)) // the index of the symbolizer that named each frame, or -1
	first := Chain(nil)
	var later *queries
	for i, x := range chain {
		if _, ok := x.(preparer); ok && i < math.MaxInt16 {
			later = &queries{}
			first = append(chain[:i:i], later)
			break
		}
	}
	total := len(p.Frames)
	step := func(i int) {
		if prog != nil && i&(1<<12-1) == 0 {
			prog(min(i, total), total) // frames named again in other processes count past total
		}
	}
	var again []int32
	var ns *funcNamers
	var nf []named // by frame, when ns is set
	if later == nil {
		// No symbolizer reads ahead: frames are named side by side,
		// each goroutine sharing the locations it makes.
		// Process by process, so that the tables each lookup searches
		// stay in the cache from one frame to the next: frames are
		// numbered as first sampled, the processes interleaved (naming
		// a large capture's frames took twice as long).
		// Each code is one frame (see mergeSameCode); one whose first
		// process no symbolizer could name is named in the others'.
		order := make([]int32, len(p.Frames))
		for i := range order {
			order[i] = int32(i)
		}
		order = p.framesByProcess(order)
		ns, nf = &funcNamers{}, make([]named, len(p.Frames))
		nameAll := func(order []int32, base int, alts bool) {
			parallelFrames(len(order), func(d int) { step(base + d) }, func() func(i int) {
				w := ns.worker(len(order) / min(runtime.GOMAXPROCS(0), 8))
				return func(j int) {
					i := order[j]
					f := &p.Frames[i]
					var loc Location
					k := -1
					if alts {
						loc, k = p.nameAlt(chain, name, int(i))
					} else {
						loc, k = name(chain, f)
					}
					if by[i] = int16(k); k >= 0 {
						f.Loc, nf[i] = ns.name(w, loc, f.Kernel)
					}
				}
			})
		}
		nameAll(order, 0, false)
		nameAll(p.unnamedWithAlts(by), len(order), true)
	}
	locs := locations{}
	for i := range p.Frames {
		if later == nil {
			break
		}
		step(i)
		f := &p.Frames[i]
		later.hit = false
		loc, k := name(first, f)
		if later.hit {
			again = append(again, int32(i))
			continue
		}
		f.Loc, by[i] = locs.of(loc), int16(k)
	}
	if later != nil && len(again) > 0 {
		chain[len(first)-1].(preparer).prepare(later.qs)
		later.qs = nil
		for _, i := range again {
			f := &p.Frames[i]
			loc, k := name(chain, f)
			f.Loc, by[i] = locs.of(loc), int16(k)
		}
	}
	if later != nil {
		for _, i := range p.unnamedWithAlts(by) {
			if loc, k := p.nameAlt(chain, name, int(i)); k >= 0 {
				p.Frames[i].Loc, by[i] = locs.of(loc), int16(k)
			}
		}
	}
	p.Funcs = p.Funcs[:0]
	funcs := make(map[Function]FuncID, ns.functions())
	// Without ns, named frames share their locations: the function of a
	// location is looked up once (by pointer, for user and kernel frames
	// apart), not hashed by name for every frame.
	var ofLoc [2]map[*Location]FuncID
	var nums [][]FuncID
	if ns != nil {
		nums = ns.numbering()
	} else {
		for i := range ofLoc {
			ofLoc[i] = make(map[*Location]FuncID)
		}
	}
	unresolved, unnamed, calls := 0, 0, 0
	var with []int32 // the frames with inlined calls
	for i := range p.Frames {
		f := &p.Frames[i]
		if k := by[i]; k >= 0 {
			counts[k]++
			if ns != nil {
				n := nf[i]
				if n.calls > 0 {
					calls += int(n.calls)
					with = append(with, int32(i))
				}
				unnamed += int(n.unnamed)
				f.Func = ns.funcOf(n, nums, funcs, &p.Funcs)
				continue
			}
			if in := f.Loc.Inline; len(in) > 0 {
				calls += len(in)
				with = append(with, int32(i))
				for j := range in {
					if in[j].unnamed {
						unnamed++
					}
				}
			}
			m := ofLoc[b2i(f.Kernel)]
			id, ok := m[f.Loc]
			if !ok {
				id = internFunc(funcs, &p.Funcs, Function{Name: f.Loc.Function, DSO: f.Loc.DSO, Kernel: f.Kernel})
				m[f.Loc] = id
			}
			f.Func = id
			continue
		}
		loc := p.fallback(f)
		f.Loc = &loc
		unresolved++
		name := f.Loc.Function
		if !p.Addresses {
			name = UnnamedFunction(f.Loc.DSO)
		}
		f.Func = internFunc(funcs, &p.Funcs, Function{Name: name, DSO: f.Loc.DSO, Kernel: f.Kernel})
	}
	p.SymbolStats = map[string]int{"unresolved": unresolved}
	for i, n := range names {
		p.SymbolStats[n] += counts[i]
	}
	p.inlineCalls = calls
	if p.inline == nil {
		p.inline = &lazyInline{}
	}
	p.inline.with, p.inline.listed = with, true
	if unnamed > 0 {
		p.SymbolStats[UnnamedInline] = unnamed
	}
}

// locations shares the locations of frames that name the same code
// without inlined calls: frames of one library in many processes, of
// several addresses on one line. A [Frame] held its [Location] itself,
// 80 bytes; a million frames name about a hundred thousand places.
type locations map[locationKey]*Location

type locationKey struct {
	function, dso, file string
	line                int
}

// of returns a location equal to loc, shared when it has no inlined calls.
func (ls locations) of(loc Location) *Location {
	if len(loc.Inline) > 0 {
		return new(loc)
	}
	k := locationKey{loc.Function, loc.DSO, loc.File, loc.Line}
	if l, ok := ls[k]; ok {
		return l
	}
	l := new(loc) // a copy: loc itself stays on the stack
	ls[k] = l
	return l
}

// parallelFrames calls a worker's do(i) for every i below n, from as many
// goroutines as there are CPUs to run them, each with a worker of its own
// (from worker) taking the next block of indexes; the calling goroutine,
// one of them, calls step(done) between its blocks. Small counts are done
// on the calling goroutine alone.
func parallelFrames(n int, step func(done int), worker func() func(i int)) {
	const block = 1 << 12
	workers := min(runtime.GOMAXPROCS(0), 8, (n+block-1)/block)
	var next atomic.Int64
	work := func(main bool) {
		do := worker()
		for {
			lo := int(next.Add(block)) - block
			if lo >= n {
				return
			}
			if main {
				step(lo)
			}
			for i := lo; i < min(lo+block, n); i++ {
				do(i)
			}
		}
	}
	var wg sync.WaitGroup
	for range workers - 1 {
		wg.Go(func() { work(false) })
	}
	work(true)
	wg.Wait()
}

// preparer is a [Symbolizer] that is told beforehand the addresses it
// will be asked about, so that it reads what they need at once (a file's
// DWARF units in one pass).
type preparer interface {
	Symbolizer
	prepare(qs []query)
}

// query is one address a symbolizer is asked about.
type query struct {
	pid    int32
	addr   uint64
	kernel bool
}

// queries stands for a [preparer] in the first pass of naming: it notes
// what it is asked, and that it was, and names nothing.
type queries struct {
	qs  []query
	hit bool
}

func (q *queries) Symbolize(pid int32, addr uint64, kernel bool) (Location, bool) {
	q.qs = append(q.qs, query{pid, addr, kernel})
	q.hit = true
	return Location{}, false
}

// nameReturn names the code of the return address addr with sym (whose
// int is negative when it cannot): from the call, addr-1, whose line,
// inlined functions and even function may differ from addr's. Captures
// recorded before return addresses were bundled at addr-1 have source
// lines for addr only: those are kept when addr-1 has none and is in the
// same function.
//
// The one return address that follows no call is a signal frame's: the
// kernel makes the handler return to the start of the restorer, which
// calls rt_sigreturn. glibc puts a nop before its restorer for the sake
// of addr-1; Go's runtime.sigreturn__sigaction directly follows
// runtime.cgoSigtramp, and a Go line table, which has no sizes, gives
// addr-1 to cgoSigtramp. So a Go runtime function at addr-1 is checked
// against addr being a Go restorer.
func nameReturn(sym func(uint64) (Location, int), addr uint64) (Location, int) {
	if addr == 0 {
		return sym(addr)
	}
	loc, k := sym(addr - 1)
	if k < 0 {
		return sym(addr)
	}
	if strings.HasPrefix(loc.Function, "runtime.") {
		if at, j := sym(addr); j >= 0 && goRestorer(at.Function) {
			return at, j
		}
	}
	if loc.File == "" && len(loc.Inline) == 0 {
		if at, j := sym(addr); j >= 0 && at.Function == loc.Function {
			return at, j
		}
	}
	return loc, k
}

// goRestorer says whether fn is the Go runtime's signal restorer, the
// code a signal handler returns to (runtime.sigreturn before Go 1.20 on
// amd64 and on other architectures).
func goRestorer(fn string) bool {
	return fn == "runtime.sigreturn__sigaction" || fn == "runtime.sigreturn"
}

// framesByProcess returns frames, indexes of p.Frames, grouped by process
// (in order of first frame), each process's kernel frames first, by
// address (halved: the order need not be exact).
func (p *Profile) framesByProcess(frames []int32) []int32 {
	group := make(map[int32]int32) // pid -> group
	var count []int32
	of := make([]int32, len(frames))
	for j, i := range frames {
		g, ok := group[p.Frames[i].PID]
		if !ok {
			g = int32(len(count))
			group[p.Frames[i].PID] = g
			count = append(count, 0)
		}
		of[j] = g
		count[g]++
	}
	next := make([]int32, len(count))
	for g := 1; g < len(count); g++ {
		next[g] = next[g-1] + count[g-1]
	}
	// The frames of each process, by kind and address.
	type frameAt struct {
		at uint64 // the address, with the top bit for the user's
		i  int32
	}
	byAddr := make([]frameAt, len(frames))
	start := slices.Clone(next)
	for j, g := range of {
		i := frames[j]
		f := &p.Frames[i]
		at := f.Addr >> 1
		if !f.Kernel {
			at |= 1 << 63
		}
		byAddr[next[g]] = frameAt{at, i}
		next[g]++
	}
	// The processes are sorted side by side, largest first.
	groups := make([]int32, len(start))
	for g := range groups {
		groups[g] = int32(g)
	}
	slices.SortFunc(groups, func(a, b int32) int { return cmp.Compare(count[b], count[a]) })
	parallelItems(len(groups), min(runtime.GOMAXPROCS(0), 8, len(frames)>>12+1), func(j int) {
		g := groups[j]
		slices.SortFunc(byAddr[start[g]:next[g]], func(a, b frameAt) int { return cmp.Compare(a.at, b.at) })
	})
	order := make([]int32, len(frames))
	for j, f := range byAddr {
		order[j] = f.i
	}
	return order
}

// parallelItems calls do(i) for every i below n, from up to workers
// goroutines (the calling one among them), each taking the next i in
// turn: for items of unequal sizes, such as processes.
func parallelItems(n, workers int, do func(i int)) {
	var taken atomic.Int32
	work := func() {
		for {
			i := int(taken.Add(1)) - 1
			if i >= n {
				return
			}
			do(i)
		}
	}
	var wg sync.WaitGroup
	for range workers - 1 {
		wg.Go(work)
	}
	work()
	wg.Wait()
}

// b2i returns 1 for true, else 0.
func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// internFunc returns the id of fn in list, indexed by ids, appending it
// when it is new.
func internFunc(ids map[Function]FuncID, list *[]Function, fn Function) FuncID {
	id, ok := ids[fn]
	if !ok {
		id = FuncID(len(*list))
		ids[fn] = id
		*list = append(*list, fn)
	}
	return id
}

// UnnamedFunction returns the name of the function that stands for all
// the addresses of dso that no symbolizer named, as views show them by
// default: "[unknown in DSO]", or "[unknown]" when the DSO is unknown.
func UnnamedFunction(dso string) string {
	if dso == "" {
		return "[unknown]"
	}
	return "[unknown in " + dso + "]"
}

// fallback names a frame no symbolizer named.
func (p *Profile) fallback(f *Frame) Location {
	if m := p.Mapping(f.PID, f.Addr); m != nil && !f.Kernel {
		base := m.Base()
		return Location{Function: fmt.Sprintf("%s+%#x", base, f.Addr-m.Start+m.Offset), DSO: base}
	}
	dso := ""
	if f.Kernel {
		dso = "[kernel]"
	}
	return Location{Function: fmt.Sprintf("[unknown] %#x", f.Addr), DSO: dso}
}
