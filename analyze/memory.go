package analyze

import (
	"encoding/binary"
	"io"
	"math"
	"slices"
	"strconv"

	"nsprof/capture"
	"nsprof/symbol"
)

// MemoryOptions configures [Profile.Memory] and [ReadMemory]. The zero value is the default.
type MemoryOptions struct {
	// PIDs keeps only the allocations of these processes; default all.
	PIDs []int32
	// NoHostFiles names only from the capture (bundle, JIT maps,
	// kallsyms), never from this machine's files. Default false.
	NoHostFiles bool
	// Inline gives the functions inlined at each address (from the
	// capture's source lines) frames of their own in [MemStack.Frames],
	// as [ViewOptions.Inline] does for samples. Default false.
	Inline bool
}

// Memory is the heap profile of a capture's ALLOCATION frames, as
// written by nsprof record --memprof or Sysprof's memprof: allocations
// with a size and a stack, frees with size 0 and no stack, matched by
// address within a process. A frame of size 0 with a stack is an
// allocation of 0 bytes (malloc(0) returns a block that is freed later);
// Sysprof's own viewer reads it as a free.
type Memory struct {
	// Allocs and Frees count the recorded events.
	Allocs, Frees int64
	// Bytes and Objects are the totals allocated. In a sampled capture
	// (SampleBytes > 0) both are unbiased estimates.
	Bytes   int64
	Objects float64
	// SampleBytes is the sampling interval of the recording, 0 when
	// every allocation was recorded.
	SampleBytes int64
	// Peak is the largest number of live bytes (all processes together)
	// and PeakTime when it was reached, on the capture clock.
	Peak, PeakTime int64
	// LeakBytes and LeakObjects are still live at the end: allocated
	// during the recording and never freed.
	LeakBytes   int64
	LeakObjects float64
	// TempBytes and TempObjects were temporary: freed by the allocating
	// thread before it allocated anything else (heaptrack's definition).
	TempBytes   int64
	TempObjects float64
	// Stacks are the distinct (process, stack) pairs that allocated, in
	// the order first seen.
	Stacks []MemStack
	// Start is the capture's start, for times relative to it.
	Start int64
	// HasLost says whether the recording counted the events it could
	// not record (nsprof record --memprof does); Lost counts those
	// dropped because a ring stayed full, SignalDropped those of
	// signal handlers that found no room.
	HasLost             bool
	Lost, SignalDropped int64
}

// MemStack is what one stack of one process allocated.
type MemStack struct {
	PID int32
	// Addrs are the stack's return addresses and Locs name them,
	// innermost (the allocator's caller) first.
	Addrs []uint64
	Locs  []Location
	// Frames is the stack as reports show it, innermost first: Locs, or
	// with [MemoryOptions.Inline] each preceded by the functions inlined
	// at its address, innermost first.
	Frames []Location
	// Allocs counts the recorded allocations.
	Allocs int64
	// Bytes and Objects were allocated; LeakBytes and LeakObjects of
	// them were never freed; TempBytes and TempObjects were temporary.
	Bytes, LeakBytes, TempBytes       int64
	Objects, LeakObjects, TempObjects float64
}

type liveBlock struct {
	size    int64
	objects float64
	stack   int32
}

type pidAddr struct {
	pid  int32
	addr uint64
}

// ReadMemory reads the ALLOCATION frames of a capture and builds its heap
// profile, naming frames with p's symbolizers (p is the capture loaded
// with [Load]). [Profile.Memory] gives the same without reading the
// capture again. A capture damaged after its header gives the profile of
// the frames before the damage together with the error.
func ReadMemory(r io.Reader, p *Profile, opts MemoryOptions) (*Memory, error) {
	cr, err := capture.NewReader(r)
	if err != nil {
		return nil, err
	}
	b := &memBuilder{
		m:      &Memory{Start: p.Start},
		stacks: make(map[string]int32),
		locs:   make(map[pidAddr]Location),
		p:      p,
		inline: opts.Inline,
	}
	chain := Chain{p.CaptureSymbolizer()}
	if !opts.NoHostFiles {
		chain = append(chain, NewHostSymbolizer(p, symbol.Loader{}))
	}
	b.sym = chain
	var readErr error
	for {
		raw, err := cr.NextRaw()
		if err == io.EOF {
			break
		}
		if err != nil {
			readErr = err
			break
		}
		if raw.Type != capture.TypeAllocation && raw.Type != capture.TypeMetadata {
			continue
		}
		fr, err := raw.Decode()
		if err != nil {
			readErr = err
			break
		}
		switch f := fr.(type) {
		case *capture.Allocation:
			if len(opts.PIDs) > 0 && !slices.Contains(opts.PIDs, f.PID) {
				continue
			}
			b.add(f)
		case *capture.Metadata:
			switch f.ID {
			case capture.MetaMemprofSampleBytes:
				b.m.SampleBytes, _ = strconv.ParseInt(f.Value, 10, 64)
			case capture.MetaMemprofLost:
				b.m.HasLost = true
				b.m.Lost = parseCount(f.Value, b.m.Lost)
			case capture.MetaMemprofSignalDropped:
				b.m.HasLost = true
				b.m.SignalDropped = parseCount(f.Value, b.m.SignalDropped)
			}
		}
	}
	b.finish()
	return b.m, readErr
}

type memBuilder struct {
	m      *Memory
	p      *Profile
	sym    Chain
	events []allocEvent
	// remap maps the events' stacks to m.Stacks, when they are not
	// indexes in it already.
	remap  []int32
	stacks map[string]int32
	locs   map[pidAddr]Location
	key    []byte
	inline bool
}

// parseCount adds the count in a metadata value to n: one value per
// recording, and a capture may join several (nsprof cat).
func parseCount(v string, n int64) int64 {
	c, err := strconv.ParseInt(v, 10, 64)
	if err != nil || c < 0 {
		return n
	}
	return n + c
}

func (b *memBuilder) add(a *capture.Allocation) {
	e := allocEvent{time: a.Time, addr: a.Addr, size: a.Size, pid: a.PID, tid: a.TID, stack: -1}
	if a.Size > 0 || len(a.Addrs) > 0 { // a free has no stack
		e.stack = StackID(b.stack(a.PID, a.Addrs))
	}
	b.events = append(b.events, e)
}

// stack interns (pid, addrs) and names its frames the first time.
func (b *memBuilder) stack(pid int32, addrs []uint64) int32 {
	b.key = binary.LittleEndian.AppendUint32(b.key[:0], uint32(pid))
	for _, a := range addrs {
		b.key = binary.LittleEndian.AppendUint64(b.key, a)
	}
	if id, ok := b.stacks[string(b.key)]; ok {
		return id
	}
	id := int32(len(b.m.Stacks))
	b.stacks[string(b.key)] = id
	locs := make([]Location, len(addrs))
	for i, a := range addrs {
		locs[i] = b.loc(pid, a)
	}
	frames := locs
	if b.inline {
		frames = withInline(locs)
	}
	b.m.Stacks = append(b.m.Stacks, MemStack{PID: pid, Addrs: slices.Clone(addrs), Locs: locs, Frames: frames})
	return id
}

// withInline returns locs, innermost first, with the functions inlined
// at each location before it; locs itself when none has any.
func withInline(locs []Location) []Location {
	n := 0
	for _, l := range locs {
		n += len(l.Inline)
	}
	if n == 0 {
		return locs
	}
	out := make([]Location, 0, len(locs)+n)
	for _, l := range locs {
		out = append(out, l.Inline...)
		l.Inline = nil
		out = append(out, l)
	}
	return out
}

func (b *memBuilder) loc(pid int32, addr uint64) Location {
	key := pidAddr{pid, addr}
	if l, ok := b.locs[key]; ok {
		return l
	}
	// Every address of an allocation's stack is a return address.
	l, k := nameReturn(func(a uint64) (Location, int) {
		if l, ok := b.sym.Symbolize(pid, a, false); ok {
			return l, 0
		}
		return Location{}, -1
	}, addr)
	if k < 0 {
		l = b.p.fallback(&Frame{PID: pid, Addr: addr})
	}
	b.locs[key] = l
	return l
}

// finish replays the events in time order: per-stack totals, live blocks,
// the peak, leaks and temporary allocations.
func (b *memBuilder) finish() {
	m := b.m
	// Rings are drained in turns, so frames are ordered per thread only.
	if b.remap == nil { // Profile.Memory's events are sorted, and shared
		sortByTime(b.events)
	}
	live := make(map[pidAddr]liveBlock)
	lastAlloc := make(map[int32]pidAddr) // per thread
	objectsOf := make(map[int64]float64)
	var cur int64
	for _, e := range b.events {
		if b.remap != nil && e.stack >= 0 {
			e.stack = StackID(b.remap[e.stack])
		}
		k := pidAddr{e.pid, e.addr}
		if e.stack < 0 {
			m.Frees++
			blk, ok := live[k]
			if !ok {
				continue // allocated before the recording
			}
			delete(live, k)
			cur -= blk.size
			if lastAlloc[e.tid] == k {
				s := &m.Stacks[blk.stack]
				s.TempBytes += blk.size
				s.TempObjects += blk.objects
				m.TempBytes += blk.size
				m.TempObjects += blk.objects
			}
			delete(lastAlloc, e.tid)
			continue
		}
		m.Allocs++
		obj := 1.0
		if m.SampleBytes > 0 {
			o, ok := objectsOf[e.size]
			if !ok {
				o = sampledObjects(e.size, m.SampleBytes)
				objectsOf[e.size] = o
			}
			obj = o
		}
		s := &m.Stacks[e.stack]
		s.Allocs++
		s.Bytes += e.size
		s.Objects += obj
		m.Bytes += e.size
		m.Objects += obj
		if old, ok := live[k]; ok {
			cur -= old.size // a free we did not see
		}
		live[k] = liveBlock{size: e.size, objects: obj, stack: int32(e.stack)}
		lastAlloc[e.tid] = k
		cur += e.size
		if cur > m.Peak {
			m.Peak, m.PeakTime = cur, e.time
		}
	}
	for _, blk := range live {
		s := &m.Stacks[blk.stack]
		s.LeakBytes += blk.size
		s.LeakObjects += blk.objects
		m.LeakBytes += blk.size
		m.LeakObjects += blk.objects
	}
	b.events = nil
}

// sampledObjects estimates how many blocks one sample of weight w stands
// for when one byte in n was sampled: the block's size s solves
// w = s / (1 - exp(-s/n)), and the sample stands for w/s blocks.
func sampledObjects(w, n int64) float64 {
	fw, fn := float64(w), float64(n)
	if fw <= fn {
		return fw // tiny blocks: w ≈ n + s/2
	}
	lo, hi := 0.0, fw
	for range 60 {
		mid := (lo + hi) / 2
		if mid/(-math.Expm1(-mid/fn)) < fw {
			lo = mid
		} else {
			hi = mid
		}
	}
	s := (lo + hi) / 2
	if s < 1 {
		s = 1
	}
	return fw / s
}

// MemFunc is what the stacks through one function allocated: Self counts
// allocations the function asked for itself (it called the allocator),
// Total those with the function anywhere on the stack (once per stack).
type MemFunc struct {
	Function, DSO             string
	SelfBytes, TotalBytes     int64
	SelfObjects, TotalObjects float64
	SelfAllocs, TotalAllocs   int64
	LeakBytes                 int64
}

// Top returns the functions by bytes allocated, largest self first.
func (m *Memory) Top() []MemFunc {
	idx := make(map[[2]string]int)
	var out []MemFunc
	get := func(l Location) *MemFunc {
		k := [2]string{l.Function, l.DSO}
		i, ok := idx[k]
		if !ok {
			i = len(out)
			idx[k] = i
			out = append(out, MemFunc{Function: l.Function, DSO: l.DSO})
		}
		return &out[i]
	}
	seen := make(map[[2]string]bool)
	for i := range m.Stacks {
		s := &m.Stacks[i]
		if len(s.Frames) == 0 {
			f := get(Location{Function: "[no stack]"})
			f.SelfBytes += s.Bytes
			f.SelfObjects += s.Objects
			f.SelfAllocs += s.Allocs
			f.TotalBytes += s.Bytes
			f.TotalObjects += s.Objects
			f.TotalAllocs += s.Allocs
			f.LeakBytes += s.LeakBytes
			continue
		}
		f := get(s.Frames[0])
		f.SelfBytes += s.Bytes
		f.SelfObjects += s.Objects
		f.SelfAllocs += s.Allocs
		f.LeakBytes += s.LeakBytes
		clear(seen)
		for _, l := range s.Frames {
			k := [2]string{l.Function, l.DSO}
			if seen[k] {
				continue
			}
			seen[k] = true
			f := get(l)
			f.TotalBytes += s.Bytes
			f.TotalObjects += s.Objects
			f.TotalAllocs += s.Allocs
		}
	}
	slices.SortStableFunc(out, func(a, b MemFunc) int {
		if a.SelfBytes != b.SelfBytes {
			return cmpDesc(a.SelfBytes, b.SelfBytes)
		}
		return cmpDesc(a.TotalBytes, b.TotalBytes)
	})
	return out
}

func cmpDesc(a, b int64) int {
	switch {
	case a > b:
		return -1
	case a < b:
		return 1
	}
	return 0
}

// MemNode is a node of the top-down allocation tree: the bytes and
// objects allocated with Loc at this position of the stack.
type MemNode struct {
	Loc      Location
	Bytes    int64
	Objects  float64
	Allocs   int64
	Children []*MemNode
}

// Tree returns the top-down call tree by bytes allocated; the root is
// unnamed and holds the totals. Children are sorted by bytes.
func (m *Memory) Tree() *MemNode {
	root := &MemNode{}
	for i := range m.Stacks {
		s := &m.Stacks[i]
		n := root
		n.Bytes += s.Bytes
		n.Objects += s.Objects
		n.Allocs += s.Allocs
		for j := len(s.Frames) - 1; j >= 0; j-- {
			n = n.child(s.Frames[j])
			n.Bytes += s.Bytes
			n.Objects += s.Objects
			n.Allocs += s.Allocs
		}
	}
	root.sort()
	return root
}

func (n *MemNode) child(l Location) *MemNode {
	for _, c := range n.Children {
		if c.Loc.Function == l.Function && c.Loc.DSO == l.DSO {
			return c
		}
	}
	c := &MemNode{Loc: l}
	n.Children = append(n.Children, c)
	return c
}

func (n *MemNode) sort() {
	slices.SortStableFunc(n.Children, func(a, b *MemNode) int { return cmpDesc(a.Bytes, b.Bytes) })
	for _, c := range n.Children {
		c.sort()
	}
}

// Leaks returns the stacks that left blocks live at the end, most bytes
// first.
func (m *Memory) Leaks() []*MemStack {
	return m.stacksBy(func(s *MemStack) int64 { return s.LeakBytes })
}

// Temporaries returns the stacks of temporary allocations, most bytes
// first.
func (m *Memory) Temporaries() []*MemStack {
	return m.stacksBy(func(s *MemStack) int64 { return s.TempBytes })
}

func (m *Memory) stacksBy(v func(*MemStack) int64) []*MemStack {
	var out []*MemStack
	for i := range m.Stacks {
		if v(&m.Stacks[i]) > 0 {
			out = append(out, &m.Stacks[i])
		}
	}
	slices.SortStableFunc(out, func(a, b *MemStack) int { return cmpDesc(v(a), v(b)) })
	return out
}

// Memory returns the heap profile of p's allocations, as [ReadMemory]
// builds it from the capture, without reading the capture again: the
// allocations are samples of p and their frames are named already.
// Only opts.PIDs and opts.Inline apply.
func (p *Profile) Memory(opts MemoryOptions) *Memory {
	m := &Memory{Start: p.Start, SampleBytes: p.sampleBytes, HasLost: p.memLost.has, Lost: p.memLost.lost, SignalDropped: p.memLost.signal}
	want := func(e *allocEvent) bool { return len(opts.PIDs) == 0 || slices.Contains(opts.PIDs, e.pid) }
	// The stacks in the order first seen in the file, as ReadMemory has
	// them: by their first allocation's sample index (p.allocs are in
	// time order).
	first := make(map[StackID]int32)
	for i := range p.allocs {
		e := &p.allocs[i]
		if e.stack < 0 || !want(e) {
			continue
		}
		if f, ok := first[e.stack]; !ok || e.sample < f {
			first[e.stack] = e.sample
		}
	}
	order := make([]StackID, 0, len(first))
	for id := range first {
		order = append(order, id)
	}
	slices.SortFunc(order, func(a, b StackID) int { return int(first[a]) - int(first[b]) })
	remap := make([]int32, p.NumStacks()) // stack -> m.Stacks
	for _, id := range order {
		remap[id] = int32(len(m.Stacks))
		pid := p.Samples[first[id]].PID
		m.Stacks = append(m.Stacks, p.memStack(pid, id, opts.Inline))
	}
	events := p.allocs // in time order already; finish only reads them
	if len(opts.PIDs) > 0 {
		events = make([]allocEvent, 0, len(p.allocs))
		for i := range p.allocs {
			if want(&p.allocs[i]) {
				events = append(events, p.allocs[i])
			}
		}
	}
	b := &memBuilder{m: m, p: p, events: events, remap: remap}
	b.finish()
	return m
}

// memStack returns the MemStack of the allocation stack id of process
// pid, with no values yet.
func (p *Profile) memStack(pid int32, id StackID, inline bool) MemStack {
	st := p.Stack(id)
	s := MemStack{PID: pid, Addrs: make([]uint64, len(st)), Locs: make([]Location, len(st))}
	for i, fr := range st {
		s.Addrs[i], s.Locs[i] = p.Frames[fr].Addr, p.Frames[fr].Loc
	}
	s.Frames = s.Locs
	if inline {
		s.Frames = withInline(s.Locs)
	}
	return s
}
