package record

import (
	"cmp"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/klauspost/compress/gzip"

	"nsprof/capture"
	"nsprof/internal/gcpace"
	"nsprof/symbol"
	"nsprof/symcache"
)

// writeSymbols resolves the sampled addresses and embeds the names as
// Sysprof's __symbols__ file. It is written uncompressed: Sysprof 3.46
// reads only that, and 45+ finds either form. Source lines and inline
// frames, where the files have DWARF, follow as capture.LinesFile,
// gzipped.
func (r *recorder) writeSymbols() {
	start := time.Now()
	defer gcpace.Floor(bundleHeapFloor, bundleGCPercent)()
	var prog progress
	if r.status != nil {
		defer r.status.clear()
		prog = func(done, total int, name string) {
			r.status.text(fmt.Sprintf("symbolizing %d/%d %s", done, total, name))
		}
	}
	if r.opts.SymbolCache != "" {
		c, err := symcache.Open(r.opts.SymbolCache, symcache.Options{MaxBytes: r.opts.SymbolCacheMaxBytes})
		if err != nil {
			r.logf("symbols not cached: %v", err)
		} else {
			r.sym.cache = c
			defer func() {
				r.fill = joinFill(r.fill, r.sym.takeFill(c, r.opts.SymbolCacheMaxBytes))
				if n, err := c.Trim(); err != nil {
					r.logf("symbols cached, but the cache not trimmed: %v", err)
				} else if n > 0 {
					r.notef("symbol cache %s: %d least recently used entries removed to keep it under its size bound", c.Dir(), n)
				}
				c.Close()
				r.sym.cache = nil
			}()
		}
	}
	if r.sym.cache != nil && r.sym.sampledKernel() {
		// This boot's kallsyms, taken back from the cache now: checking
		// it maps all of its 6.8 MB for a moment, which at the kernel
		// addresses' turn, with the files' symbol tables held, raised
		// the recording's peak.
		r.kernelSymbols()
	}
	// The records are written as the bundle gives them, 32 bytes each
	// with each name once (as capture.Symbol values, 56 bytes each
	// holding its strings, a 60 s recording over a compile loop
	// allocated 97 MB as their slice grew).
	var syms capture.SymbolsBuilder
	// In a temporary file, unlinked at once: about 150 records a process
	// over a compile loop (195,711 for 1,299 processes in 40 s, 6.3 MB),
	// so some 75 MB for the 15,700 processes of a 10-minute recording;
	// in memory where no file can be made.
	if f, err := os.CreateTemp("", "nsprof-symbols-*"); err == nil {
		os.Remove(f.Name())
		defer f.Close()
		syms.KeepIn(f)
	}
	lines := r.sym.bundle(func(s capture.Symbol) { syms.Add(s) }, r.kernelTable, r.tr.nsPID, prog, r.notef)
	n := syms.Len()
	b, err := syms.Reader()
	if err != nil {
		r.logf("symbols not bundled: %v", err)
		return
	}
	h := capture.FrameHeader{CPU: -1, PID: -1, Time: r.now()}
	if err := r.w.AddMetadata(h.Time, capture.MetaSymbolsComplete, "1"); err != nil {
		if r.writeErr == nil {
			r.writeErr = err
		}
		return
	}
	if err := r.w.AddSymbolsReader(h, b); err != nil {
		if r.writeErr == nil {
			r.writeErr = err
		}
		return
	}
	r.symbolized = n
	if len(lines) > 0 {
		if err := r.w.AddLinesFile(h, lines, gzip.BestSpeed); err != nil {
			if r.writeErr == nil {
				r.writeErr = err
			}
			return
		}
	}
	r.notef("bundled %d symbols and %d source lines in %.3fs (files: %s)", n, len(lines), time.Since(start).Seconds(), r.sym.summary())
}

// bundleGCPercent is the GC percent while the symbol bundle is made. Its
// live heap is mostly the DWARF of the files being read, let go file by
// file, and the heap grows to twice the live heap under the default 100:
// that made the recorder's peak RSS at the end. With 50, a busy 10 s
// recording at 4 kHz peaked at 54-58 MB against 64-70 MB (the two run side
// by side, 4 times), for as much CPU within the noise.
const bundleGCPercent = 50

// bundleHeapFloor is the heap the bundle lets grow before collecting it
// (see [gcpace.Floor]): its live heap starts at a few megabytes, which
// GC percent 50 alone collected every megabyte or two (20 collections
// in the half second of a compile loop's bundle, 100-140 ms of CPU
// against 35 ms for the 10 s of recording before it), and reaches past
// the floor only while large DWARF is read, where the percent bounds
// the peak as before. Over a compile loop at 1 kHz, interleaved with
// the build before: 12 MiB, 0.87 of the CPU for the same peak; 16 MiB,
// 0.89 for 1.7 MiB more; 24 MiB, 0.85 for 3.3 MiB more (5 pairs each).
// The recording's own heap reaches about 12 MiB.
const bundleHeapFloor = 12 << 20

// kernelTable names kernel addresses: all of a bundle's at once, in
// increasing order, as [symbol.Kallsyms.LookupSorted] does.
type kernelTable interface {
	LookupSorted(addrs []uint64) (syms []symbol.Symbol, found []bool)
}

// progress reports symbolization progress; done of total objects.
type progress func(done, total int, name string)

// bundle resolves every sampled address and gives the __symbols__
// records to emit, in order of process ID, and returns the source lines
// and inline frames of the user addresses whose files have DWARF: by file
// offset, once for every process, where the mapping's MAP frame names its
// file by build-id, else by process and address. kallsyms opens the
// kernel symbol list; it is read only when samples hit the kernel. nsPID
// gives a process's pid in its own PID namespace, for JIT maps. Failures
// are notes, never fatal: an address without a name is left out, as
// Sysprof leaves it.
func (s *symbolizer) bundle(emit func(capture.Symbol), kallsyms func() (kernelTable, error), nsPID func(pid int) int, prog progress, logf func(string, ...any)) (lines []capture.AddrLines) {
	pids := append(make([]int, 0, len(s.procs)+s.spill.at.len()), s.spill.pids()...)
	for pid := range s.procs {
		pids = append(pids, pid)
	}
	// In the order of the records' 32-bit pids (a pid of 2^32-1, read
	// as an int, is the records' -1), as capture.SymbolsBuilder takes
	// them best.
	slices.SortFunc(pids, func(a, b int) int { return cmp.Compare(int32(a), int32(b)) })
	// A process written out is read back for each pass, and dropped
	// after it: the passes hold one at a time.
	procOf := func(pid int) *symProc {
		if p := s.procs[pid]; p != nil {
			return p
		}
		if p := s.spill.get(pid); p != nil {
			return p
		}
		return &symProc{}
	}

	// The objects samples hit, the file offsets in each sampled, and
	// those whose frames are wanted: loaded first, so that each reads
	// the DWARF of just those addresses, and names its offsets before
	// the next is read.
	hit := make(map[*symObj]*objHits)
	var objs []*symObj
	// The addresses of an image are sorted: those of one object come
	// in a row, and its hits are looked up once for them.
	var lastObj *symObj
	var lastHits *objHits
	// The kernel addresses of all processes, named in one walk of the
	// kernel's symbols (see kernelNames).
	var kaddrs []uint64
	for _, pid := range pids {
		p := procOf(pid)
		p.expand()
		kaddrs = append(kaddrs, p.kernelAddrs()...)
		for _, g := range p.gens() {
			for i, a := range g.packed {
				if m := g.find(a); m != nil {
					if m.obj != lastObj {
						lastObj, lastHits = m.obj, hit[m.obj]
						if lastHits == nil {
							lastHits = &objHits{}
							objs = append(objs, m.obj)
							hit[m.obj] = lastHits
						}
					}
					lastHits.add(a-m.start+m.off, g.flags[i]&packLine != 0)
				}
			}
		}
	}
	frames, names := s.resolveObjects(objs, hit, prog, logf)

	// At most an address of each object's with frames: grown by append,
	// the copies were 10.8 MB of the 143 MB a recording of a compile
	// loop at 4 kHz allocated.
	nframes := 0
	for _, fr := range frames {
		nframes += len(fr)
	}
	fileLines := make([]capture.AddrLines, 0, nframes)
	kern := kernelNames(kaddrs, kallsyms, logf)
	// Each object's sampled offsets walked with a cursor (objCursor),
	// made when a process first reaches the object; the one of the
	// address before kept at hand, looked up again only when the object
	// changes.
	cursors := make(map[*symObj]*objCursor, len(objs))
	var curObj *symObj
	var cur *objCursor
	var named namedBegins
	for _, pid := range pids {
		p := procOf(pid)
		named.reset()
		add := func(begin, end uint64, name, tag string) {
			if named.add(begin) {
				emit(capture.Symbol{PID: int32(pid), Begin: begin, End: end, Name: name, Tag: tag})
			}
		}
		var jit *symbol.Table
		jitTried := false
		gens := p.gens()
		for gi, g := range gens {
			for ai, a := range g.packed {
				m := g.find(a)
				shadow := false
				if gi < len(gens)-1 {
					if m == nil {
						continue // JIT code is looked up in the current image only
					}
					// A later image maps the address too: the
					// bundle, keyed by pid and address, can name
					// only one, the later. This one's lines are
					// described by build-id and offset, which
					// reports name it by (analyze's splitImages).
					if shadow = shadowed(gens[gi+1:], a); shadow {
						if g.flags[ai]&packLine != 0 {
							s.shadowed++ // one reports look up
						}
						if m.id == "" {
							continue
						}
					}
				}
				if m == nil {
					if !jitTried {
						jitTried = true
						jit = s.jitMap(p, pid, nsPID)
					}
					if jit != nil {
						if sym, ok := jit.Lookup(a); ok {
							add(sym.Addr, sym.Addr+max(sym.Size, 1)-1, symbol.Demangle(sym.Name), "JIT")
						}
					}
					continue
				}
				o := m.obj
				if o != curObj {
					curObj, cur = o, cursors[o]
					if cur == nil {
						cur = newObjCursor(names[o], frames[o])
						cursors[o] = cur
						frames[o] = nil // held by the cursor, by index
					}
				}
				off := a - m.start + m.off
				i, ok := cur.find(off)
				if !ok || cur.n.fn[i] < 0 {
					continue
				}
				if !shadow {
					va, fn := cur.n.vas[i], &cur.n.fns[cur.n.fn[i]]
					begin := a - (va - fn.addr)
					add(begin, begin+max(fn.size, 1)-1, fn.name, o.tag)
				}
				if g.flags[ai]&packLine == 0 {
					continue
				}
				fr := cur.framesAt(i)
				if len(fr) == 0 && shadow {
					// Named by its function alone, where the file
					// has no source lines: the bundle cannot name it.
					fr = cur.nameOnly(i, cur.n.fns[cur.n.fn[i]].name)
				}
				if len(fr) == 0 {
					continue
				}
				if m.id == "" {
					lines = append(lines, capture.AddrLines{PID: int32(pid), Addr: a, Frames: fr})
					continue
				}
				// Described once for every process mapping the
				// file, which its MAP frames name by build-id: below.
				cur.described[i], cur.id = true, m.id
				if shadow {
					s.shadowedNamed++
				}
			}
		}
		for _, a := range p.kernelAddrs() {
			if sym, ok := kern.lookup(a); ok {
				add(sym.Addr, sym.Addr+max(sym.Size, 1)-1, sym.Name, "Kernel")
			}
		}
	}
	if n := s.spill.readFailed; n > 0 {
		logf("%d exited processes' sampled addresses could not be read back from the spill file: their frames are unnamed", n)
	}
	return append(lines, describedLines(fileLines, cursors)...)
}

// describedLines appends to out the lines of the offsets the cursors
// described, by object and offset: a cursor's offsets are in order, and
// the cursors are taken in the order of their objects' ids. Two objects
// of one build-id, reached by two paths, describe it twice: then all
// are sorted, and the repeats dropped. (Sorting them all every time,
// comparing the ids, was 80 ms of the bundle's 640 in CPU profiles of
// seven warm recordings over a compile loop.)
func describedLines(out []capture.AddrLines, cursors map[*symObj]*objCursor) []capture.AddrLines {
	var curs []*objCursor
	for _, c := range cursors {
		if c.id != "" {
			curs = append(curs, c)
		}
	}
	slices.SortFunc(curs, func(x, y *objCursor) int { return strings.Compare(x.id, y.id) })
	start, twice := len(out), false
	for k, c := range curs {
		twice = twice || k > 0 && curs[k-1].id == c.id
		for i, d := range c.described {
			if d {
				out = append(out, capture.AddrLines{Object: c.id, Addr: c.n.offs[i], Frames: c.framesAt(i)})
			}
		}
	}
	if twice {
		lines := out[start:]
		slices.SortStableFunc(lines, func(x, y capture.AddrLines) int {
			return cmp.Or(strings.Compare(x.Object, y.Object), cmp.Compare(x.Addr, y.Addr))
		})
		out = append(out[:start], slices.CompactFunc(lines, func(x, y capture.AddrLines) bool {
			return x.Object == y.Object && x.Addr == y.Addr
		})...)
	}
	return out
}

// kernelAddrNames are the names of a bundle's kernel addresses.
type kernelAddrNames struct {
	addrs []uint64 // sorted, once each
	syms  []symbol.Symbol
	found []bool
}

// kernelNames names addrs, the kernel addresses of all processes, through
// the table kallsyms opens (only when there are some): all at once, in
// increasing order. Looked up one process after the other, each in its
// own order, they left the whole of the symbol cache's mapped kallsyms
// resident (6.6 MB, see symbol.Kallsyms.LookupSorted).
func kernelNames(addrs []uint64, kallsyms func() (kernelTable, error), logf func(string, ...any)) *kernelAddrNames {
	if len(addrs) == 0 {
		return nil
	}
	slices.Sort(addrs)
	addrs = slices.Compact(addrs)
	kern, err := kallsyms()
	if err != nil {
		logf("kernel frames not named: %v", err)
		return nil
	}
	syms, found := kern.LookupSorted(addrs)
	return &kernelAddrNames{addrs: addrs, syms: syms, found: found}
}

// lookup returns the symbol of a, one of the addresses named (none when
// n is nil: nothing was).
func (n *kernelAddrNames) lookup(a uint64) (symbol.Symbol, bool) {
	if n == nil {
		return symbol.Symbol{}, false
	}
	i, ok := slices.BinarySearch(n.addrs, a)
	if !ok || !n.found[i] {
		return symbol.Symbol{}, false
	}
	return n.syms[i], true
}

// resolveObjects loads the objects samples hit and gives the source
// frames of their addresses (hit holds each object's file offsets), by
// link-time address, and the names of all their sampled offsets; each
// object's tables are let go once it is named (releaseTables). Objects
// are independent and most of the wait at record end is theirs (symbol
// tables, inflating DWARF, debuginfod), so they are done side by side,
// one per CPU, as far as the memory they take allows (resolveGate). The
// frames are shared by every record of an address.
func (s *symbolizer) resolveObjects(objs []*symObj, hit map[*symObj]*objHits, prog progress, logf func(string, ...any)) (map[*symObj]map[uint64][]capture.SourceFrame, map[*symObj]*objNames) {
	var mu sync.Mutex // for logf, prog and out
	locked := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		logf(format, args...)
	}
	out := make(map[*symObj]map[uint64][]capture.SourceFrame, len(objs))
	names := make(map[*symObj]*objNames, len(objs))
	done := 0
	work := make(chan *symObj)
	gate := newResolveGate(resolveBudget)
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(objs)) {
		wg.Go(func() {
			for o := range work {
				h := hit[o]
				size := o.size()
				gate.enter(size)
				all, lines := h.offsets()
				fr, use := o.resolve(lines, s.cache, locked)
				o.dropLines()
				n := o.nameOffsets(all)
				o.releaseTables(s.carry)
				gate.leave(size)
				mu.Lock()
				out[o] = fr
				names[o] = n
				if use&cacheUntrusted != 0 {
					s.cacheUntrusted++
					use &^= cacheUntrusted
				}
				s.cacheUses[use]++
				s.addFill(o.fill)
				o.fill = nil
				done++
				if prog != nil {
					prog(done, len(objs), o.path)
				}
				mu.Unlock()
			}
		})
	}
	for _, o := range objs {
		work <- o
	}
	close(work)
	wg.Wait()
	return out, names
}

// namedBegins are the functions one process's records name, by their
// first address, for the bundle to name each once. The addresses of an
// image come sorted, those of a function in a row, and then the
// kernel's, above them: a function is new when it begins above every
// one named. Only a process whose functions do not come in order
// (several images, JIT code) has them in a set, made then: a set made
// for each process was the bundle's largest cost over a compile loop.
type namedBegins struct {
	last, max uint64
	any       bool
	begins    []uint64 // in order, while seen is nil
	seen      map[uint64]bool
}

// reset forgets the functions named, for the next process.
func (n *namedBegins) reset() {
	n.any, n.begins, n.seen = false, n.begins[:0], nil
}

// add reports whether the function beginning at begin is new, and
// notes it.
func (n *namedBegins) add(begin uint64) bool {
	if n.any && begin == n.last {
		return false
	}
	first := !n.any
	n.last, n.any = begin, true
	switch {
	case first || begin > n.max:
		n.max = begin
		if n.seen != nil {
			n.seen[begin] = true
		} else {
			n.begins = append(n.begins, begin)
		}
		return true
	case n.seen == nil:
		n.seen = make(map[uint64]bool, 2*len(n.begins))
		for _, b := range n.begins {
			n.seen[b] = true
		}
	}
	if n.seen[begin] {
		return false
	}
	n.seen[begin] = true
	return true
}
